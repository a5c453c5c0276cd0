import { timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { RequestUser } from './resource-type.js';

/**
 * Static bearer tokens from kube-apiserver's `--token-auth-file`: a CSV file, one token per line,
 * `token,user,uid[,"group1,group2"]`; blank lines and lines starting with `#` are skipped. Errors name
 * the file and line. The file is read once at start, as upstream (restart to change it).
 */
export class StaticTokens {
  private constructor(private readonly users: ReadonlyMap<string, RequestUser>) {}

  get size(): number {
    return this.users.size;
  }

  static async load(path: string): Promise<StaticTokens> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      throw new Error(`${path}: cannot read the token file: ${(err as Error).message}`);
    }
    return StaticTokens.parse(text, path);
  }

  static parse(text: string, path = 'token file'): StaticTokens {
    const users = new Map<string, RequestUser>();
    text.split(/\r?\n/).forEach((line, i) => {
      const where = `${path}:${i + 1}`;
      if (line.trim() === '' || line.trimStart().startsWith('#')) return;
      const fields = csvFields(line, where);
      if (fields.length < 3) {
        throw new Error(
          `${where}: a token line is token,user,uid[,"group1,group2"]; got ${fields.length} field(s)`,
        );
      }
      const [token, name, uid, groups] = fields as [string, string, string, string | undefined];
      if (token === '') throw new Error(`${where}: the token (first field) is empty`);
      if (name === '') throw new Error(`${where}: the user name (second field) is empty`);
      if (users.has(token)) throw new Error(`${where}: this token is already on an earlier line`);
      const groupList = (groups ?? '')
        .split(',')
        .map((g) => g.trim())
        .filter(Boolean);
      users.set(token, {
        name,
        ...(uid ? { uid } : {}),
        groups: [...groupList, 'system:authenticated'],
      });
    });
    return new StaticTokens(users);
  }

  /** The user of `token`, compared in constant time against every known token. */
  authenticate(token: string): RequestUser | undefined {
    const given = Buffer.from(token);
    let found: RequestUser | undefined;
    for (const [known, user] of this.users) {
      const k = Buffer.from(known);
      if (k.length === given.length && timingSafeEqual(k, given)) found = user;
    }
    return found;
  }
}

/** The fields of one CSV line: commas separate, double quotes enclose, `""` inside quotes is a quote. */
function csvFields(line: string, where: string): string[] {
  const out: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === ',') {
      out.push(field);
      field = '';
    } else field += c;
  }
  if (quoted) throw new Error(`${where}: a quoted field is not closed`);
  out.push(field);
  return out;
}
