// Command gen runs every template case through Go's own text/template and records what Go produced, so
// the TypeScript engine is checked against the real thing. Usage: go run . CASES_DIR FIXTURES_DIR
//
// Template data is decoded from JSON with encoding/json into `any`, exactly as Gatehook's engine models
// it: objects are map[string]interface{}, arrays []interface{}, numbers float64. Slices are cut to
// cap == len, because a decoded slice's spare capacity is an accident of append that `slice` could expose.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"
)

type testCase struct {
	Name     string          `json:"name"`
	Template string          `json:"template"`
	Data     json.RawMessage `json:"data,omitempty"`
	// TemplateName is the name the template is parsed under (default "t").
	TemplateName string `json:"templateName,omitempty"`
	// MinGo marks a case for a later Go than the one installed; Expect then holds the hand-written result.
	MinGo  string  `json:"minGo,omitempty"`
	Expect *result `json:"expect,omitempty"`
	Note   string  `json:"note,omitempty"`
}

type result struct {
	Output *string   `json:"output,omitempty"`
	Error  *errorOut `json:"error,omitempty"`
}

type errorOut struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

type fixture struct {
	Name         string          `json:"name"`
	Template     string          `json:"template"`
	Data         json.RawMessage `json:"data"`
	TemplateName string          `json:"templateName"`
	Source       string          `json:"source"`
	Note         string          `json:"note,omitempty"`
	result
}

type fixtureFile struct {
	Go    string    `json:"go"`
	Cases []fixture `json:"cases"`
}

var isoPattern = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|([+-])(\d{2}):(\d{2}))$`)

var monthDays = []int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

func epoch(s string) (string, error) {
	m := isoPattern.FindStringSubmatch(s)
	bad := fmt.Errorf("not an ISO 8601 timestamp: %q", s)
	if m == nil {
		return "", bad
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	year, month, day, hour, minute, second := n(1), n(2), n(3), n(4), n(5), n(6)
	if month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59 {
		return "", bad
	}
	dim := monthDays[month-1]
	if month == 2 && (year%4 == 0 && year%100 != 0 || year%400 == 0) {
		dim = 29
	}
	if day < 1 || day > dim {
		return "", bad
	}
	offset := 0
	if m[8] != "Z" {
		oh, om := n(10), n(11)
		if oh > 23 || om > 59 {
			return "", bad
		}
		offset = oh*3600 + om*60
		if m[9] == "-" {
			offset = -offset
		}
	}
	sec := time.Date(year, time.Month(month), day, hour, minute, second, 0, time.UTC).Unix() - int64(offset)
	frac := m[7]
	for len(frac) < 9 {
		frac += "0"
	}
	nanos, _ := strconv.Atoi(frac)
	return strconv.FormatFloat(float64(sec)+float64(nanos)/1e9, 'f', -1, 64), nil
}

func jsonFunc(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

var markup = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// funcs are Gatehook's template functions, with the signatures the TypeScript engine gives them.
var funcs = template.FuncMap{
	"json":      jsonFunc,
	"escape":    func(s string) string { return markup.Replace(s) },
	"epoch":     epoch,
	"hasSuffix": strings.HasSuffix,
}

func clipCaps(v any) any {
	switch x := v.(type) {
	case []any:
		for i := range x {
			x[i] = clipCaps(x[i])
		}
		return x[:len(x):len(x)]
	case map[string]any:
		for k := range x {
			x[k] = clipCaps(x[k])
		}
	}
	return v
}

func run(c testCase) result {
	name := c.TemplateName
	if name == "" {
		name = "t"
	}
	var data any
	raw := c.Data
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &data); err != nil {
		panic(fmt.Sprintf("case %q: bad data: %v", c.Name, err))
	}
	data = clipCaps(data)
	t, err := template.New(name).Funcs(funcs).Parse(c.Template)
	if err != nil {
		return result{Error: &errorOut{Kind: "parse", Message: err.Error()}}
	}
	var out bytes.Buffer
	if err := t.Execute(&out, data); err != nil {
		return result{Error: &errorOut{Kind: "exec", Message: err.Error()}}
	}
	s := out.String()
	return result{Output: &s}
}

// goAtLeast compares "1.22" against the running toolchain's version.
func goAtLeast(min string) bool {
	have := strings.TrimPrefix(runtime.Version(), "go")
	parse := func(v string) (int, int) {
		parts := strings.SplitN(v, ".", 3)
		a, _ := strconv.Atoi(parts[0])
		b := 0
		if len(parts) > 1 {
			b, _ = strconv.Atoi(parts[1])
		}
		return a, b
	}
	ha, hb := parse(have)
	ma, mb := parse(min)
	return ha > ma || ha == ma && hb >= mb
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gen CASES_DIR FIXTURES_DIR")
		os.Exit(2)
	}
	files, err := filepath.Glob(filepath.Join(os.Args[1], "*.json"))
	if err != nil {
		panic(err)
	}
	sort.Strings(files)
	total, hand := 0, 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			panic(err)
		}
		var cases []testCase
		if err := json.Unmarshal(raw, &cases); err != nil {
			panic(fmt.Sprintf("%s: %v", file, err))
		}
		out := fixtureFile{Go: runtime.Version()}
		seen := map[string]bool{}
		for _, c := range cases {
			if seen[c.Name] {
				panic(fmt.Sprintf("%s: duplicate case name %q", file, c.Name))
			}
			seen[c.Name] = true
			f := fixture{Name: c.Name, Template: c.Template, Data: c.Data, TemplateName: c.TemplateName, Note: c.Note, Source: "go"}
			if f.TemplateName == "" {
				f.TemplateName = "t"
			}
			if len(f.Data) == 0 {
				f.Data = json.RawMessage("{}")
			}
			if c.MinGo != "" && !goAtLeast(c.MinGo) {
				if c.Expect == nil {
					panic(fmt.Sprintf("%s: case %q needs go%s and has no expect", file, c.Name, c.MinGo))
				}
				f.result = *c.Expect
				f.Source = "hand (needs go" + c.MinGo + ")"
				hand++
			} else {
				f.result = run(c)
			}
			out.Cases = append(out.Cases, f)
			total++
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			panic(err)
		}
		dest := filepath.Join(os.Args[2], filepath.Base(file))
		if err := os.WriteFile(dest, b.Bytes(), 0o644); err != nil {
			panic(err)
		}
	}
	fmt.Printf("%d cases (%d hand-written for a later Go) with %s\n", total, hand, runtime.Version())
}
