/** Test support for service-account tokens: the TokenRequest URL and a JWT's decoded parts. */

export const tokenPath = (namespace: string, serviceAccount: string) =>
  `/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccount}/token`;

export function decodeToken(token: string): { header: any; claims: any } {
  const [header, payload] = token.split('.');
  const json = (part: string | undefined) =>
    JSON.parse(Buffer.from(part ?? '', 'base64url').toString('utf8'));
  return { header: json(header), claims: json(payload) };
}
