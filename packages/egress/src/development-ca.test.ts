import { X509Certificate } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { developmentEgressEnv, ensureDevelopmentCa, issueLocalCertificate } from './development-ca';

const freshDir = () => path.join(mkdtempSync(path.join(tmpdir(), 'gatehook-dev-ca-')), 'dev-ca');

describe('development CA', () => {
  it('is made once and then reused; it signs a certificate for localhost and 127.0.0.1', () => {
    const dir = freshDir();
    const ca = ensureDevelopmentCa(dir);
    expect(ensureDevelopmentCa(dir).certPem).toBe(ca.certPem);
    const leaf = new X509Certificate(issueLocalCertificate(ca).certPem);
    expect(leaf.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(leaf.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(leaf.checkHost('localhost')).toBe('localhost');
  });

  it('development start-up admits loopback and trusts the CA, unless already set; any other NODE_ENV adds nothing', () => {
    const dir = freshDir();
    expect(developmentEgressEnv({ NODE_ENV: 'development' }, dir)).toEqual({ EGRESS_ALLOW_CIDRS: '127.0.0.1/32', EGRESS_EXTRA_CA_FILE: path.join(dir, 'ca.pem') });
    expect(developmentEgressEnv({ NODE_ENV: 'development', EGRESS_ALLOW_CIDRS: '10.0.0.0/8', EGRESS_EXTRA_CA_FILE: '/mine.pem' }, dir)).toEqual({});
    for (const NODE_ENV of ['production', 'test', undefined]) expect(developmentEgressEnv({ NODE_ENV }, freshDir())).toEqual({});
  });
});
