import type { HostLookup } from '@gatehook/egress/address-policy';

/** Test DNS: names used by the API tests, resolving without the network. Unknown names fail like NXDOMAIN. */
export const testLookup: HostLookup = async (host) => {
  const table: Record<string, string[]> = {
    'hooks.example.com': ['93.184.215.14'],
    'siem.example.com': ['93.184.215.15', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    'internal.example.com': ['10.0.0.5'],
    'rebind.example.com': ['93.184.215.14', '127.0.0.1'],
    'metadata.example.com': ['169.254.169.254'],
    'nat64.example.com': ['64:ff9b::a9fe:a9fe'],
    'cgnat.example.com': ['100.64.1.1'],
    'mapped.example.com': ['::ffff:10.1.2.3'],
  };
  const addresses = table[host];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return addresses;
};
