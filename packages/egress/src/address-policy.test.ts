import {
  checkDestinationUrl,
  classifyAddress,
  findBlockedAddress,
  parseCidrList,
  type HostLookup,
} from '@gatehook/egress/address-policy';

const none = parseCidrList('');

/** A resolver that answers from a table and fails the test on any other name. */
function fakeLookup(table: Record<string, string[]>): jest.Mock<Promise<string[]>, [string]> {
  return jest.fn(async (host: string) => {
    const addresses = table[host];
    if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addresses;
  });
}

const resolver = fakeLookup({
  'mixed.example.com': ['93.184.215.14', '10.0.0.1'],
  'loopback6.example.com': ['::1'],
  'mixed6.example.com': ['2606:4700::1', 'fe80::1'],
  '127.0.0.1.nip.io': ['127.0.0.1'],
  'mapped.example.com': ['::ffff:10.0.0.1'],
  'metadata.example.com': ['169.254.169.254'],
  'cgnat.example.com': ['93.184.215.14', '100.64.1.1'],
  'scoped.example.com': ['fe80::1%eth0'],
  'public.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
});

describe('checkDestinationUrl rejects', () => {
  // [url, reason, words the message must contain]
  it.each<[string, string, string]>([
    // IPv4 special-purpose registry, multicast and cloud metadata
    ['https://0.0.0.0/', 'blocked_address', 'this network'],
    ['https://0.1.2.3/', 'blocked_address', 'this network'],
    ['https://10.0.0.1/', 'blocked_address', 'private'],
    ['https://10.255.255.255/', 'blocked_address', 'private'],
    ['https://100.64.0.1/', 'blocked_address', 'carrier-grade NAT'],
    ['https://100.127.255.254/', 'blocked_address', 'carrier-grade NAT'],
    ['https://100.100.100.200/latest/meta-data/', 'blocked_address', 'cloud metadata'],
    ['https://127.0.0.1/', 'blocked_address', 'loopback'],
    ['https://127.255.255.254:8443/', 'blocked_address', 'loopback'],
    ['https://169.254.0.1/', 'blocked_address', 'link-local'],
    ['https://169.254.169.254/latest/meta-data/', 'blocked_address', 'cloud metadata'],
    ['https://169.254.170.2/v2/credentials', 'blocked_address', 'cloud metadata'],
    ['https://168.63.129.16/machine', 'blocked_address', 'cloud metadata'],
    ['https://172.16.0.1/', 'blocked_address', 'private'],
    ['https://172.31.255.255/', 'blocked_address', 'private'],
    ['https://192.0.0.1/', 'blocked_address', 'IETF protocol assignments'],
    ['https://192.0.0.192/', 'blocked_address', 'cloud metadata'],
    ['https://192.0.2.1/', 'blocked_address', 'documentation'],
    ['https://192.31.196.1/', 'blocked_address', 'AS112'],
    ['https://192.52.193.1/', 'blocked_address', 'AMT'],
    ['https://192.88.99.1/', 'blocked_address', '6to4 relay'],
    ['https://192.168.1.1/', 'blocked_address', 'private'],
    ['https://192.175.48.1/', 'blocked_address', 'AS112'],
    ['https://198.18.0.1/', 'blocked_address', 'benchmarking'],
    ['https://198.19.255.255/', 'blocked_address', 'benchmarking'],
    ['https://198.51.100.7/', 'blocked_address', 'documentation'],
    ['https://203.0.113.9/', 'blocked_address', 'documentation'],
    ['https://224.0.0.1/', 'blocked_address', 'multicast'],
    ['https://239.255.255.250/', 'blocked_address', 'multicast'],
    ['https://240.0.0.1/', 'blocked_address', 'reserved'],
    ['https://255.255.255.255/', 'blocked_address', 'broadcast'],

    // Every IPv4 spelling WHATWG URL accepts is normalised to dotted decimal before the check
    ['https://2130706433/', 'blocked_address', 'loopback'],
    ['https://0177.0.0.1/', 'blocked_address', 'loopback'],
    ['https://017700000001/', 'blocked_address', 'loopback'],
    ['https://0x7f.1/', 'blocked_address', 'loopback'],
    ['https://0x7f000001/', 'blocked_address', 'loopback'],
    ['https://0X7F.0.0.1/', 'blocked_address', 'loopback'],
    ['https://127.1/', 'blocked_address', 'loopback'],
    ['https://127.0.1/', 'blocked_address', 'loopback'],
    ['https://127.0.0.1./', 'blocked_address', 'loopback'],
    ['https://%31%32%37.0.0.1/', 'blocked_address', 'loopback'],
    ['https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/', 'blocked_address', 'loopback'],
    ['https://0/', 'blocked_address', 'this network'],
    ['https://0xA9.0xFE.0xA9.0xFE/', 'blocked_address', 'cloud metadata'],
    ['https://2852039166/', 'blocked_address', 'cloud metadata'],
    ['https://0251.0376.0251.0376/', 'blocked_address', 'cloud metadata'],
    ['https://10.1/', 'blocked_address', 'private'],
    ['https://192.168.257/', 'blocked_address', 'private'],

    // IPv6 literals, including every way of smuggling an IPv4 address
    ['https://[::1]/', 'blocked_address', 'loopback'],
    ['https://[0:0:0:0:0:0:0:1]/', 'blocked_address', 'loopback'],
    ['https://[0000:0000:0000:0000:0000:0000:0000:0001]:443/', 'blocked_address', 'loopback'],
    ['https://[::]/', 'blocked_address', 'unspecified'],
    ['https://[::ffff:127.0.0.1]/', 'blocked_address', 'IPv4-mapped IPv6'],
    ['https://[::ffff:7f00:1]/', 'blocked_address', 'IPv4-mapped IPv6'],
    ['https://[::ffff:169.254.169.254]/', 'blocked_address', 'IPv4-mapped IPv6'],
    ['https://[::ffff:8.8.8.8]/', 'blocked_address', 'IPv4-mapped IPv6'],
    ['https://[::127.0.0.1]/', 'blocked_address', 'IPv4-compatible IPv6'],
    ['https://[::ffff:0:8.8.8.8]/', 'blocked_address', 'IPv4-translated IPv6'],
    ['https://[64:ff9b::a9fe:a9fe]/', 'blocked_address', 'NAT64'],
    ['https://[64:ff9b::8.8.8.8]/', 'blocked_address', 'NAT64'],
    ['https://[64:ff9b:1::10.0.0.1]/', 'blocked_address', 'NAT64'],
    ['https://[100::1]/', 'blocked_address', 'discard-only'],
    ['https://[100:0:0:1::1]/', 'blocked_address', 'dummy prefix'],
    ['https://[2001::1]/', 'blocked_address', 'Teredo'],
    ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'blocked_address', 'Teredo'],
    ['https://[2001:1::1]/', 'blocked_address', 'IETF protocol assignments'],
    ['https://[2001:2::1]/', 'blocked_address', 'benchmarking'],
    ['https://[2001:3::1]/', 'blocked_address', 'AMT'],
    ['https://[2001:4:112::1]/', 'blocked_address', 'AS112'],
    ['https://[2001:10::1]/', 'blocked_address', 'ORCHID'],
    ['https://[2001:20::1]/', 'blocked_address', 'ORCHID'],
    ['https://[2001:30::1]/', 'blocked_address', 'drone remote ID'],
    ['https://[2001:1ff::1]/', 'blocked_address', 'IETF protocol assignments'],
    ['https://[2001:db8::1]/', 'blocked_address', 'documentation'],
    ['https://[2002:7f00:1::]/', 'blocked_address', '6to4'],
    ['https://[2002:a9fe:a9fe::1]/', 'blocked_address', '6to4'],
    ['https://[2620:4f:8000::1]/', 'blocked_address', 'AS112'],
    ['https://[3fff::1]/', 'blocked_address', 'documentation'],
    ['https://[5f00::1]/', 'blocked_address', 'SRv6 SIDs'],
    ['https://[fc00::1]/', 'blocked_address', 'unique local'],
    ['https://[fd12:3456:789a::1]/', 'blocked_address', 'unique local'],
    ['https://[fd00:ec2::254]/', 'blocked_address', 'cloud metadata'],
    ['https://[fd20:ce::254]/', 'blocked_address', 'cloud metadata'],
    ['https://[fe80::1]/', 'blocked_address', 'link-local'],
    ['https://[FEBF:FFFF:0000:0000:0000:0000:0000:0001]/', 'blocked_address', 'link-local'],
    ['https://[fec0::1]/', 'blocked_address', 'site-local'],
    ['https://[ff02::1]/', 'blocked_address', 'multicast'],
    ['https://[4000::1]/', 'blocked_address', 'not global unicast'],
    ['https://[1::1]/', 'blocked_address', 'not global unicast'],

    // Names that only ever point inside a network
    ['https://localhost/', 'blocked_address', '.localhost'],
    ['https://LOCALHOST./', 'blocked_address', '.localhost'],
    ['https://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/', 'blocked_address', '.localhost'],
    ['https://api.localhost:8443/', 'blocked_address', '.localhost'],
    ['https://printer.local/', 'blocked_address', '.local'],
    ['https://db.internal/', 'blocked_address', '.internal'],
    ['https://metadata.google.internal/computeMetadata/v1/', 'blocked_address', '.internal'],
    ['https://router.home.arpa/', 'blocked_address', '.home.arpa'],
    ['https://box.localdomain/', 'blocked_address', '.localdomain'],

    // Names whose resolution includes a non-public address: one bad answer is enough
    ['https://mixed.example.com/', 'blocked_address', 'private'],
    ['https://loopback6.example.com/', 'blocked_address', 'loopback'],
    ['https://mixed6.example.com/', 'blocked_address', 'link-local'],
    ['https://127.0.0.1.nip.io/', 'blocked_address', 'loopback'],
    ['https://mapped.example.com/', 'blocked_address', 'IPv4-mapped IPv6'],
    ['https://metadata.example.com/', 'blocked_address', 'cloud metadata'],
    ['https://cgnat.example.com/', 'blocked_address', 'carrier-grade NAT'],
    ['https://scoped.example.com/', 'blocked_address', 'link-local'],

    // Wrong scheme, or not a URL at all
    ['http://example.com/', 'not_https', 'https'],
    ['http://93.184.215.14/', 'not_https', 'https'],
    ['ftp://example.com/', 'not_https', 'https'],
    ['file:///etc/passwd', 'not_https', 'https'],
    ['javascript:alert(1)', 'not_https', 'https'],
    ['wss://example.com/', 'not_https', 'https'],
    ['not a url', 'invalid_url', 'not valid'],
    ['', 'invalid_url', 'not valid'],
    ['https://', 'invalid_url', 'not valid'],
    ['//example.com/hook', 'invalid_url', 'not valid'],
    ['https://[::1', 'invalid_url', 'not valid'],
    ['https://[fe80::1%25eth0]/', 'invalid_url', 'not valid'],
    ['https://1.2.3.4.5/', 'invalid_url', 'not valid'],
    ['https://256.0.0.1/', 'invalid_url', 'not valid'],
    ['https://exa mple.com/', 'invalid_url', 'not valid'],
    ['https://example.com:99999/', 'invalid_url', 'not valid'],
  ])('%s → %s (%s)', async (url, reason, words) => {
    const result = await checkDestinationUrl(url, { allow: none, lookup: resolver });
    expect(result).toEqual({ ok: false, reason, message: expect.stringContaining(words) });
  });
});

describe('checkDestinationUrl messages', () => {
  it.each([
    'https://10.0.0.1/hooks/s3cr3t-path?token=s3cr3t-query',
    'https://user:s3cr3t-pass@db.internal/s3cr3t-path',
    'https://mixed.example.com/s3cr3t-path?token=s3cr3t-query',
    'https://nowhere.example.com/s3cr3t-path?token=s3cr3t-query',
    'http://example.com/s3cr3t-path?token=s3cr3t-query',
    'https://exa mple.com/s3cr3t-path',
  ])('never quote the URL: %s', async (url) => {
    const result = await checkDestinationUrl(url, { allow: none, lookup: resolver });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).not.toMatch(/s3cr3t|user|example\.com|10\.0\.0\.1|db\.internal/);
  });
});

describe('checkDestinationUrl accepts', () => {
  it.each<[string, string, string[]]>([
    ['https://93.184.215.14/', '93.184.215.14', ['93.184.215.14']],
    ['https://8.8.8.8:8443/hooks/abc?x=1', '8.8.8.8', ['8.8.8.8']],
    ['https://[2606:4700:4700::1111]/', '2606:4700:4700::1111', ['2606:4700:4700::1111']],
    ['https://[2a00:1450:4001:82b::200e]:8443/h', '2a00:1450:4001:82b::200e', ['2a00:1450:4001:82b::200e']],
    // 100.63/100.128 and 172.15/172.32 sit just outside their blocked neighbours
    ['https://100.63.255.255/', '100.63.255.255', ['100.63.255.255']],
    ['https://100.128.0.1/', '100.128.0.1', ['100.128.0.1']],
    ['https://172.15.255.255/', '172.15.255.255', ['172.15.255.255']],
    ['https://172.32.0.1/', '172.32.0.1', ['172.32.0.1']],
    [
      'https://public.example.com/hook',
      'public.example.com',
      ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    ],
    // Userinfo may carry the receiver's credentials
    [
      'https://user:pass@public.example.com/hook',
      'public.example.com',
      ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    ],
  ])('%s', async (url, host, addresses) => {
    await expect(checkDestinationUrl(url, { allow: none, lookup: resolver })).resolves.toEqual({
      ok: true,
      host,
      addresses,
    });
  });

  it('does not resolve IP literals or names refused by suffix', async () => {
    const lookup = fakeLookup({});
    await checkDestinationUrl('https://93.184.215.14/', { allow: none, lookup });
    await checkDestinationUrl('https://[2606:4700:4700::1111]/', { allow: none, lookup });
    await checkDestinationUrl('https://metadata.google.internal/', { allow: none, lookup });
    expect(lookup).not.toHaveBeenCalled();
  });

  it('resolves the host name without brackets, port or userinfo', async () => {
    const lookup = fakeLookup({ 'public.example.com': ['93.184.215.14'] });
    await checkDestinationUrl('https://u:p@PUBLIC.example.com:8443/x', { allow: none, lookup });
    expect(lookup).toHaveBeenCalledWith('public.example.com');
  });
});

describe('checkDestinationUrl DNS failures', () => {
  it('reports a resolver error as dns_error with its code', async () => {
    const result = await checkDestinationUrl('https://nowhere.example.com/', { allow: none, lookup: fakeLookup({}) });
    expect(result).toEqual({ ok: false, reason: 'dns_error', message: expect.stringContaining('ENOTFOUND') });
  });

  it('reports an empty answer as dns_error', async () => {
    const lookup: HostLookup = async () => [];
    await expect(checkDestinationUrl('https://empty.example.com/', { allow: none, lookup })).resolves.toMatchObject({
      ok: false,
      reason: 'dns_error',
    });
  });

  it('uses the system resolver by default', async () => {
    // .invalid is guaranteed never to resolve (RFC 6761)
    await expect(checkDestinationUrl('https://gatehook-test.invalid/', { allow: none })).resolves.toMatchObject({
      ok: false,
      reason: 'dns_error',
    });
  });
});

describe('allow list', () => {
  const allow = parseCidrList('127.0.0.1/32, ::1/128');

  it('exempts exactly the listed addresses', async () => {
    await expect(checkDestinationUrl('https://127.0.0.1:8443/', { allow })).resolves.toEqual({
      ok: true,
      host: '127.0.0.1',
      addresses: ['127.0.0.1'],
    });
    await expect(checkDestinationUrl('https://[::1]/', { allow })).resolves.toMatchObject({ ok: true });
    await expect(checkDestinationUrl('https://127.0.0.2/', { allow })).resolves.toMatchObject({
      ok: false,
      reason: 'blocked_address',
    });
  });

  it('exempts resolved addresses too, but not local names', async () => {
    const lookup = fakeLookup({ 'receiver.example.com': ['127.0.0.1'] });
    await expect(checkDestinationUrl('https://receiver.example.com/', { allow, lookup })).resolves.toMatchObject({
      ok: true,
    });
    await expect(checkDestinationUrl('https://localhost/', { allow, lookup })).resolves.toMatchObject({ ok: false });
  });

  it('does not exempt the same address wrapped in IPv6', () => {
    expect(classifyAddress('::ffff:127.0.0.1', allow)).toEqual({ allowed: false, range: 'IPv4-mapped IPv6' });
  });
});

describe('classifyAddress', () => {
  it.each([
    ['8.8.8.8'],
    ['1.1.1.1'],
    ['93.184.215.14'],
    ['2606:4700:4700::1111'],
    ['2a03:2880:f12f:83:face:b00c::25de'],
  ])('allows public %s', (ip) => {
    expect(classifyAddress(ip)).toEqual({ allowed: true });
  });

  it.each([
    ['0x7f.1', 'invalid address'],
    ['2130706433', 'invalid address'],
    ['127.1', 'invalid address'],
    ['localhost', 'invalid address'],
    ['', 'invalid address'],
    ['fe80::1%eth0', 'link-local'],
    ['2606:4700::1%eth0', 'scoped address'],
  ])('refuses %s as %s', (ip, range) => {
    expect(classifyAddress(ip)).toEqual({ allowed: false, range });
  });

  it('names the most specific range', () => {
    expect(classifyAddress('169.254.169.254')).toEqual({ allowed: false, range: 'cloud metadata' });
    expect(classifyAddress('169.254.169.253')).toEqual({ allowed: false, range: 'link-local' });
    expect(classifyAddress('2001:0:1::1')).toEqual({ allowed: false, range: 'Teredo' });
  });

  it('finds the first blocked address of a list', () => {
    expect(findBlockedAddress(['8.8.8.8', '10.1.2.3', '127.0.0.1'], none)).toEqual({
      address: '10.1.2.3',
      range: 'private',
    });
    expect(findBlockedAddress(['8.8.8.8'], none)).toBeNull();
  });
});

describe('parseCidrList', () => {
  it('parses a comma-separated list, tolerating spaces and empty entries', () => {
    const list = parseCidrList(' 127.0.0.1/32 ,, 10.0.0.0/8,::1/128 ');
    expect(list.map((cidr) => cidr.text)).toEqual(['127.0.0.1/32', '10.0.0.0/8', '::1/128']);
    expect(classifyAddress('10.9.8.7', list)).toEqual({ allowed: true });
  });

  it('turns an empty value into an empty list', () => {
    expect(parseCidrList('')).toEqual([]);
    expect(parseCidrList('  ')).toEqual([]);
  });

  it.each([
    ['127.0.0.1'],
    ['127.0.0.1/33'],
    ['::1/129'],
    ['localhost/32'],
    ['0x7f.1/32'],
    ['127.0.0.1/'],
    ['10.0.0.0/8/8'],
  ])('throws a readable error on %s', (entry) => {
    expect(() => parseCidrList(`10.0.0.0/8,${entry}`)).toThrow(`invalid CIDR "${entry}"`);
  });
});
