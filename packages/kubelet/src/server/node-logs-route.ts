import { createReadStream } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join, sep } from 'node:path';
import { type RouteParams, sendText } from './routes.js';

/**
 * `/logs/` (upstream's system log handler, a file server on /var/log): a file's content, or a
 * directory's listing as Go's http.FileServer writes it (`<pre>` of links, directories with a
 * trailing `/`). Nothing outside the log directory can be read: a `..` segment is 403, and so is a
 * path whose real location (symlinks resolved) leaves the directory.
 */
export function nodeLogsHandler(logDir: string) {
  return async (
    req: IncomingMessage,
    res: ServerResponse,
    { path, segments }: RouteParams,
  ): Promise<void> => {
    // segments: ['logs', ...rest]
    const rest = segments.slice(1);
    if (rest.some((s) => s === '..' || s.includes('\0') || s.includes('\\'))) {
      return sendText(res, 403, `path ${JSON.stringify(path)} leaves the log directory\n`);
    }
    const relative = rest.filter((s) => s !== '' && s !== '.');
    let root: string;
    let target: string;
    try {
      root = await realpath(logDir);
    } catch {
      return sendText(res, 404, '404 page not found\n');
    }
    try {
      target = await realpath(join(root, ...relative));
    } catch {
      return sendText(res, 404, '404 page not found\n');
    }
    if (target !== root && !target.startsWith(root + sep)) {
      return sendText(res, 403, `path ${JSON.stringify(path)} leaves the log directory\n`);
    }
    const info = await stat(target);
    if (info.isDirectory()) {
      if (!path.endsWith('/')) {
        const last = path.slice(path.lastIndexOf('/') + 1);
        res.writeHead(301, { location: `${last}/`, 'content-type': 'text/html; charset=utf-8' });
        res.end();
        return;
      }
      const entries = (await readdir(target, { withFileTypes: true })).sort((a, b) =>
        a.name < b.name ? -1 : 1,
      );
      let body = '<pre>\n';
      for (const e of entries) {
        const name = e.isDirectory() ? `${e.name}/` : e.name;
        body += `<a href="${encodeURI(name).replace(/\?/g, '%3F').replace(/#/g, '%23')}">${escapeHtml(name)}</a>\n`;
      }
      body += '</pre>\n';
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    if (!info.isFile()) return sendText(res, 403, `path ${JSON.stringify(path)} is not a regular file\n`);
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(info.size) });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    await new Promise<void>((resolve) => {
      const stream = createReadStream(target);
      stream.on('error', () => {
        res.destroy();
        resolve();
      });
      stream.on('end', resolve);
      res.on('close', () => {
        stream.destroy();
        resolve();
      });
      stream.pipe(res);
    });
  };
}

function escapeHtml(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&#34;')
    .replace(/'/g, '&#39;');
}
