"""Writes seeded random template cases (test/cases/random-*.json) that widen what the Go fixtures cover:
arbitrary nesting of builtins, fields, literals and control structures over one data document, and printf with
random flags, widths, precisions, argument indexes and verbs over random floats; and token soup (random sequences of delimiters, keywords and operands) for the
lexer's and parser's error messages and lines. Usage: python3 random_cases.py
(then regenerate fixtures). %p is left out: Go prints pointer addresses for it."""
import json, os, random, struct

data = {"s": "héllo", "e": "", "n": 3, "f": 2.5, "z": 0, "neg": -1.25, "big": 1234567, "t": True, "no": False,
        "nil": None, "l": [1, "a", None, [2]], "el": [], "m": {"a": 1, "b": "x", "c": None, "d": {"e": "deep"}}, "em": {},
        "ls": ["x", "y", "z"]}
fields = ['.s', '.e', '.n', '.f', '.z', '.neg', '.big', '.t', '.no', '.nil', '.l', '.el', '.m', '.em', '.ls', '.m.a', '.m.d.e', '.m.c', '.missing', '.m.missing.x', '.', '$', '$.m.b']
lits = ['1', '0', '-2', '1.5', '0x10', "'a'", '"str"', '"é"', '`raw`', 'true', 'false', 'nil', '1e6', '3.0']
funcs = ['and', 'or', 'not', 'len', 'index', 'slice', 'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'print', 'println', 'printf', 'html', 'js', 'urlquery', 'json', 'escape', 'hasSuffix']
verbs = ['%v', '%s', '%d', '%q', '%x', '%5.2f', '%-4s|', '%t', '%g', '%e', '%08.3f', '%+d', '%#v', '%T', '%c', '%U', '%3d', '%.1s', '% x', '%%']
def operand(d):
    r = random.random()
    if r < 0.45: return random.choice(fields)
    if r < 0.75 or d > 2: return random.choice(lits)
    return '(' + command(d + 1) + ')'
def command(d=0):
    f = random.choice(funcs)
    n = random.randint(0, 3)
    args = [operand(d) for _ in range(n)]
    if f == 'printf':
        fmt = '"' + ' '.join(random.choice(verbs) for _ in range(random.randint(1, 3))) + '"'
        args = [fmt] + args
    return ' '.join([f] + args)
def pipeline():
    r = random.random()
    if r < 0.3: return operand(0)
    p = command()
    if random.random() < 0.3: p += ' | ' + random.choice(['print', 'len', 'json', 'not', 'printf "%v"', 'html', 'or 1', 'eq 1.5'])
    return p
def block(d=0):
    r = random.random()
    if d > 2 or r < 0.5: return '{{' + pipeline() + '}}'
    if r < 0.65: return '{{if ' + pipeline() + '}}A' + block(d + 1) + '{{else}}B{{end}}'
    if r < 0.8: return '{{range $i, $e := ' + random.choice(['.l', '.ls', '.m', '.el', '.nil', '.s', '.n']) + '}}[{{$i}}:' + block(d + 1) + ']{{end}}'
    return '{{with ' + pipeline() + '}}W' + block(d + 1) + '{{end}}'
def structure_cases(n):
    return [{"name": f"structure {i}", "template": ' '.join(block() for _ in range(random.randint(1, 2))), "data": data} for i in range(n)]

def rfloat():
    r = random.random()
    if r < 0.3: return round(random.uniform(-1000, 1000), random.randint(0, 4))
    if r < 0.5: return random.choice([0.5, 1.5, 2.5, 0.125, 0.375, 1.005, 2.675, 1e21, 1e20, 999999.5, 1e-5, 123456789.0, 0.1, 0.7, 5e-324, 1.7976931348623157e308])
    if r < 0.8: return random.uniform(-1, 1) * 10 ** random.randint(-12, 25)
    while True:
        f = struct.unpack('d', struct.pack('Q', random.getrandbits(64)))[0]
        if f == f and abs(f) != float('inf'): return f
flags = ['', '', '-', '+', '#', ' ', '0', '-0', '+0', '# ', '+ ']
printf_verbs = list('vdsqxXoObeEfFgGtcUT%z')
def fmt():
    out = []
    for _ in range(random.randint(1, 4)):
        w = random.choice(['', '', str(random.randint(0, 25)), '*'])
        p = random.choice(['', '', '.', '.' + str(random.randint(0, 20)), '.*'])
        idx = random.choice([''] * 8 + ['[1]', '[2]', '[9]'])
        out.append('%' + random.choice(flags) + idx + w + p + random.choice(printf_verbs) + random.choice(['', ' ', '|']))
    return ''.join(out)
vals = ['.f0', '.f1', '.f2', '.s', '.l', '.m', '.nil', '.t', '1', '-7', '255', "'x'", '"é日"', '(index "a" 0)', '3', '.missing', '12']
def printf_cases(n):
    cases = []
    for i in range(n):
        data = {"f0": rfloat(), "f1": rfloat(), "f2": rfloat(), "s": random.choice(["abc", "héllo", "", "a\tb\"c", "日本語😀"]),
                "l": [rfloat(), "x", None], "m": {"k": rfloat(), "a": "v"}, "nil": None, "t": random.random() < 0.5}
        args = ' '.join(random.choice(vals) for _ in range(random.randint(0, 4)))
        cases.append({"name": f"printf {i}", "template": '{{printf ' + json.dumps(fmt(), ensure_ascii=False) + ' ' + args + '}}|{{.f0}}|{{json .f1}}|{{.l}}', "data": data})
    return cases

syntax_tokens = ['{{', '}}', '{{- ', ' -}}', '{{-', '-}}', ' ', ' ', '\n', '.', '.a', '.b.c', 'a', '$', '$x', '$x := ',
                 '$x = ', '(', ')', '|', '"s"', "'c'", '`r`', '/*', '*/', '{{/* c */}}', ':=', '=', ',', 'if ', 'end',
                 'else', 'else if ', 'range ', 'with ', 'define "d"', 'template "d"', 'block "b" .', 'break', 'continue',
                 '1', '-1', '1.5', '0x', 'nil', 'true', 'len', 'print', 'printf "%v"', 'index', 'eq', 'and', 'x', 'é',
                 '\t', '#', '"unterminated', "'", '`', '{{end}}', '{{else}}']


def syntax_cases(n):
    doc = {"a": {"x": 1}, "b": {"c": [1, 2]}, "x": "y"}
    return [{"name": f"syntax {i}", "template": ''.join(random.choice(syntax_tokens) for _ in range(random.randint(1, 14))),
             "data": doc} for i in range(n)]


if __name__ == '__main__':
    here = os.path.dirname(os.path.abspath(__file__))
    for name, make in (('random-structure.json', structure_cases), ('random-printf.json', printf_cases),
                       ('random-syntax.json', syntax_cases)):
        random.seed(name)
        with open(os.path.join(here, '..', 'cases', name), 'w') as fh:
            json.dump(make(300), fh, ensure_ascii=False, indent=1)
            fh.write('\n')
