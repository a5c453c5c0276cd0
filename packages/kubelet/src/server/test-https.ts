// Test support: requests to the kubelet's HTTPS server (its certificate is not checked: it is self-signed).
import { request } from 'node:https';

export interface HttpsAnswer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

export function httpsGet(
  port: number,
  path: string,
  o: { cert?: string; key?: string; token?: string; method?: string } = {},
): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: o.method ?? 'GET',
        agent: false,
        rejectUnauthorized: false,
        ...(o.cert ? { cert: o.cert, key: o.key } : {}),
        headers: o.token ? { authorization: `Bearer ${o.token}` } : {},
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    )
      .on('error', reject)
      .end();
  });
}
