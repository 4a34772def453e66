import { execFileSync } from 'node:child_process'

/**
 * Writes `<name>.key` and a self-signed `<name>.crt` (RSA 2048, one day, subject `/CN=<cn>`) into `dir` with the
 * `openssl` command, as test servers and test CAs need.
 *
 * @example selfSigned(dir, 'ca', 'test-ca') // dir/ca.key, dir/ca.crt
 */
export function selfSigned(dir: string, name: string, cn: string): void {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      '-days',
      '1',
      '-subj',
      `/CN=${cn}`,
    ],
    { cwd: dir, stdio: 'ignore' },
  )
}
