#!/usr/bin/env node
// A tiny, dependency-free CRI (runtime.v1) client for the infrastructure scripts:
// gRPC over node:http2 on the containerd unix socket, with a hand-written
// protobuf encoder/decoder covering just the messages used here.
// It exists so that setup/smoke/teardown can exercise the real CRI path without
// crictl and without the workspace's node_modules.
//
//   node cri.mjs version            runtime name/version
//   node cri.mjs status             RuntimeReady/NetworkReady; exit 1 unless both true
//   node cri.mjs pods               list pod sandboxes
//   node cri.mjs rm-pods            stop and remove every pod sandbox (and its containers)
//   node cri.mjs smoke [--image IMG] [--hook CMD] [--host-port N]
//        run a pod with an httpd container and a one-shot container, check the pod IP
//        serves "hello from nodelet", the one-shot container's exit code and log,
//        ExecSync, then stop and remove everything, timing each step. CMD (if given)
//        runs with `sh -c` while the pod is up, with POD_IP and POD_PORT in its env;
//        it must exit 0. --host-port N also maps host port N to the httpd (portmap
//        plugin) and fetches it through 127.0.0.1 and every other IPv4 address of the host.
//
// Env: NODELET_CONTAINERD_SOCK (default /run/containerd/containerd.sock).

import http2 from 'node:http2';
import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';

const SOCK = process.env.NODELET_CONTAINERD_SOCK || '/run/containerd/containerd.sock';
const out = (line) => process.stdout.write(`${line}\n`);
const err = (line) => process.stderr.write(`${line}\n`);

// ---------------------------------------------------------------- protobuf --
const EMPTY = Buffer.alloc(0);

function varint(value) {
  let v = BigInt.asUintN(64, BigInt(value));
  const bytes = [];
  while (v >= 0x80n) {
    bytes.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  bytes.push(Number(v));
  return Buffer.from(bytes);
}
const tag = (field, wireType) => varint((field << 3) | wireType);
/** Length-delimited field (string, bytes, sub-message). */
const bytesField = (field, buf) => Buffer.concat([tag(field, 2), varint(buf.length), buf]);
const str = (field, s) => (s ? bytesField(field, Buffer.from(s, 'utf8')) : EMPTY);
const num = (field, n) => (n ? Buffer.concat([tag(field, 0), varint(n)]) : EMPTY);
const msg = (field, ...parts) => bytesField(field, Buffer.concat(parts));
const strs = (field, list) => Buffer.concat(list.map((s) => bytesField(field, Buffer.from(s, 'utf8'))));
const map = (field, obj) =>
  Buffer.concat(Object.entries(obj).map(([k, v]) => msg(field, str(1, k), str(2, v))));

/** Decodes one message level into Map<field, values[]> (varints as BigInt, others as Buffer). */
function decode(buf) {
  const fields = new Map();
  let i = 0;
  const readVarint = () => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (i >= buf.length) throw new Error('protobuf: truncated varint');
      const b = buf[i++];
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return result;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(readVarint());
    const field = key >>> 3;
    const wireType = key & 7;
    let value;
    if (wireType === 0) value = readVarint();
    else if (wireType === 2) {
      const len = Number(readVarint());
      value = buf.subarray(i, i + len);
      i += len;
    } else if (wireType === 1) {
      value = buf.subarray(i, i + 8);
      i += 8;
    } else if (wireType === 5) {
      value = buf.subarray(i, i + 4);
      i += 4;
    } else throw new Error(`protobuf: unsupported wire type ${wireType}`);
    if (!fields.has(field)) fields.set(field, []);
    fields.get(field).push(value);
  }
  return fields;
}
const last = (m, f) => {
  const v = m.get(f);
  return v ? v[v.length - 1] : undefined;
};
const getStr = (m, f) => (last(m, f) ?? EMPTY).toString('utf8');
const getNum = (m, f) => Number(BigInt.asIntN(64, last(m, f) ?? 0n));
const getMsg = (m, f) => decode(last(m, f) ?? EMPTY);
const getAll = (m, f) => m.get(f) ?? [];

// -------------------------------------------------------------------- gRPC --
class Cri {
  constructor(sock) {
    this.sock = sock;
    this.session = undefined;
  }

  /** The HTTP/2 session, reconnecting if containerd restarted since the last call. */
  connection() {
    if (!this.session || this.session.closed || this.session.destroyed) {
      this.session = http2.connect('http://localhost', { createConnection: () => net.connect(this.sock) });
      this.session.on('error', () => {}); // surfaced per call
    }
    return this.session;
  }

  close() {
    this.session?.close();
  }

  /** Unary call; resolves with the decoded response message. */
  call(service, method, body = EMPTY, timeoutMs = 60_000) {
    return new Promise((resolve, reject) => {
      const req = this.connection().request({
        ':method': 'POST',
        ':path': `/runtime.v1.${service}/${method}`,
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-timeout': `${timeoutMs}m`,
      });
      const chunks = [];
      let status;
      let message = '';
      const grpcStatus = (h) => {
        if (h['grpc-status'] !== undefined) {
          status = String(h['grpc-status']);
          message = decodeURIComponent(String(h['grpc-message'] ?? ''));
        }
      };
      req.on('response', grpcStatus);
      req.on('trailers', grpcStatus);
      req.on('data', (c) => chunks.push(c));
      req.on('error', (e) => reject(new Error(`${method}: ${e.message}`)));
      req.on('close', () => {
        if (status === undefined) return reject(new Error(`${method}: stream closed without grpc-status`));
        if (status !== '0') return reject(new Error(`${method}: grpc status ${status}: ${message}`));
        const data = Buffer.concat(chunks);
        if (data.length < 5) return resolve(new Map());
        if (data[0] !== 0) return reject(new Error(`${method}: compressed responses not supported`));
        resolve(decode(data.subarray(5, 5 + data.readUInt32BE(1))));
      });
      const header = Buffer.alloc(5);
      header.writeUInt32BE(body.length, 1);
      req.end(Buffer.concat([header, body]));
    });
  }

  rt(method, body, timeoutMs) {
    return this.call('RuntimeService', method, body, timeoutMs);
  }
}

// ------------------------------------------------------------- operations --
async function version(cri) {
  const r = await cri.rt('Version', str(1, 'v1'));
  return { runtime: getStr(r, 2), version: getStr(r, 3), apiVersion: getStr(r, 4) };
}

async function status(cri) {
  const r = await cri.rt('Status');
  const conditions = getAll(getMsg(r, 1), 1).map((b) => {
    const c = decode(b);
    return { type: getStr(c, 1), status: getNum(c, 2) === 1, reason: getStr(c, 3), message: getStr(c, 4) };
  });
  return conditions;
}

async function listPods(cri) {
  const r = await cri.rt('ListPodSandbox');
  return getAll(r, 1).map((b) => {
    const p = decode(b);
    const meta = getMsg(p, 2);
    return { id: getStr(p, 1), name: getStr(meta, 1), namespace: getStr(meta, 3), ready: getNum(p, 3) === 0 };
  });
}

/** RemovePodSandbox can fail transiently ("device or resource busy" on the netns); retry a few times. */
async function removePod(cri, id) {
  for (let attempt = 1; ; attempt++) {
    try {
      await cri.rt('StopPodSandbox', str(1, id));
      await cri.rt('RemovePodSandbox', str(1, id));
      return attempt;
    } catch (e) {
      if (attempt >= 5) throw e;
      err(`remove pod ${id.slice(0, 12)}: attempt ${attempt} failed (${e.message}); retrying`);
      await sleep(500 * attempt);
    }
  }
}

function httpGet(host, port, timeoutMs = 5000) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host, port, path: '/', timeout: timeoutMs }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET http://${host}:${port}/ timed out`)));
    req.on('error', reject);
  });
}

/** 127.0.0.1 and the other IPv4 addresses of this host, outside the pod network's bridge. */
function hostAddresses() {
  const external = Object.entries(os.networkInterfaces())
    .filter(([name]) => !name.startsWith('nodelet') && !name.startsWith('veth') && !name.startsWith('cni'))
    .flatMap(([, addrs]) => addrs ?? [])
    .filter((a) => a.family === 'IPv4' && !a.internal)
    .map((a) => a.address);
  return ['127.0.0.1', ...external];
}

async function smoke(cri, { image, hook, hostPort }) {
  const t = () => performance.now();
  const steps = [];
  const timed = async (name, fn) => {
    const t0 = t();
    const v = await fn();
    steps.push(`${name} ${Math.round(t() - t0)}ms`);
    return v;
  };
  const check = (cond, what) => {
    if (!cond) throw new Error(`smoke: ${what}`);
  };

  const v = await version(cri);
  out(`CRI ${v.runtime} ${v.version} (API ${v.apiVersion})`);
  const conds = await status(cri);
  for (const c of conds) check(c.status, `${c.type} is false: ${c.reason} ${c.message}`);

  const uid = `smoke-${process.pid}-${Date.now()}`;
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodelet-cri-smoke-'));
  const port = 8080;
  const sandboxConfig = Buffer.concat([
    msg(1, str(1, 'nodelet-smoke'), str(2, uid), str(3, 'nodelet-smoke')), // metadata
    str(2, 'nodelet-smoke'), // hostname
    str(3, logDir), // log_directory
    hostPort ? msg(5, num(2, port), num(3, hostPort)) : EMPTY, // port_mappings (TCP)
    map(6, { 'nodelet.dev/smoke': 'true' }), // labels
  ]);
  let podId = '';
  try {
    podId = getStr(await timed('RunPodSandbox', () => cri.rt('RunPodSandbox', msg(1, sandboxConfig))), 1);
    const podStatus = getMsg(
      await timed('PodSandboxStatus', () => cri.rt('PodSandboxStatus', str(1, podId))),
      1,
    );
    const ip = getStr(getMsg(podStatus, 5), 1);
    check(ip, 'pod sandbox has no IP (CNI)');
    out(`pod ${podId.slice(0, 12)} ip ${ip}`);

    const container = (name, command, logPath) =>
      Buffer.concat([
        str(1, podId),
        msg(
          2,
          msg(1, str(1, name)), // metadata
          msg(2, str(1, image)), // image
          strs(3, command), // command
          str(11, logPath), // log_path, relative to log_directory
        ),
        msg(3, sandboxConfig),
      ]);

    const webId = getStr(
      await timed('CreateContainer(web)', () =>
        cri.rt(
          'CreateContainer',
          container('web', ['httpd', '-f', '-p', String(port), '-h', '/var/www'], 'web.log'),
        ),
      ),
      1,
    );
    await timed('StartContainer(web)', () => cri.rt('StartContainer', str(1, webId)));

    const helloId = getStr(
      await timed('CreateContainer(hello)', () =>
        cri.rt(
          'CreateContainer',
          container('hello', ['sh', '-c', 'echo hello-from-cri; exit 3'], 'hello.log'),
        ),
      ),
      1,
    );
    await timed('StartContainer(hello)', () => cri.rt('StartContainer', str(1, helloId)));

    // httpd needs a moment to bind; poll with a deadline.
    const res = await timed('http GET pod', async () => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        try {
          return await httpGet(ip, port, 2000);
        } catch (e) {
          if (Date.now() > deadline) throw e;
          await sleep(100);
        }
      }
    });
    check(
      res.status === 200 && res.body.trim() === 'hello from nodelet',
      `GET pod: ${res.status} ${res.body}`,
    );
    out(`GET http://${ip}:${port}/ -> ${res.status} ${res.body.trim()}`);

    const exec = await timed('ExecSync', () =>
      cri.rt(
        'ExecSync',
        Buffer.concat([str(1, webId), strs(2, ['sh', '-c', 'echo exec-ok; hostname']), num(3, 10)]),
      ),
    );
    check(getNum(exec, 3) === 0, `ExecSync exit code ${getNum(exec, 3)}`);
    const execOut = getStr(exec, 1).trim().split('\n');
    check(execOut[0] === 'exec-ok', `ExecSync stdout: ${execOut}`);
    out(`ExecSync -> ${execOut.join(' | ')}`);

    // One-shot container: exit code and CRI-format log line.
    const helloStatus = await timed('wait hello exited', async () => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const s = getMsg(await cri.rt('ContainerStatus', str(1, helloId)), 1);
        if (getNum(s, 3) === 2) return s; // CONTAINER_EXITED
        check(Date.now() < deadline, 'hello container did not exit');
        await sleep(100);
      }
    });
    check(getNum(helloStatus, 7) === 3, `hello exit code ${getNum(helloStatus, 7)}, want 3`);
    const helloLog = fs.readFileSync(path.join(logDir, 'hello.log'), 'utf8');
    check(/ stdout F hello-from-cri$/m.test(helloLog), `hello.log: ${JSON.stringify(helloLog)}`);
    out(`hello container exit 3, log: ${helloLog.trim()}`);

    if (hostPort) {
      // portmap plugin: DNAT from the host port, for traffic to this host's addresses.
      for (const host of hostAddresses()) {
        const r = await timed(`http GET ${host}:${hostPort}`, () => httpGet(host, hostPort, 5000));
        check(r.body.trim() === 'hello from nodelet', `GET ${host}:${hostPort}: ${r.status} ${r.body}`);
        out(`GET http://${host}:${hostPort}/ (hostPort) -> ${r.status} ${r.body.trim()}`);
      }
    }

    if (hook) {
      // Asynchronous on purpose: the event loop must keep running so that, if the
      // hook restarts containerd, the dead HTTP/2 session is noticed and replaced.
      const code = await new Promise((resolve, reject) => {
        const child = spawn('sh', ['-c', hook], {
          stdio: 'inherit',
          env: { ...process.env, POD_IP: ip, POD_PORT: String(port) },
        });
        child.on('error', reject);
        child.on('exit', (c, sig) => resolve(c ?? sig));
      });
      check(code === 0, `hook exited ${code}`);
    }

    await timed('StopContainer(web,grace 10s)', () =>
      cri.rt('StopContainer', Buffer.concat([str(1, webId), num(2, 10)])),
    );
    await timed('StopPodSandbox', () => cri.rt('StopPodSandbox', str(1, podId)));
    await timed('RemovePodSandbox', () => removePod(cri, podId));
    const left = (await listPods(cri)).filter((p) => p.id === podId);
    check(left.length === 0, 'pod still listed after RemovePodSandbox');
    podId = '';
    out(`timings: ${steps.join(', ')}`);
  } finally {
    if (podId) {
      err(`smoke failed; cleaning up pod ${podId.slice(0, 12)}`);
      await removePod(cri, podId).catch((e) => err(`cleanup: ${e.message}`));
    }
    fs.rmSync(logDir, { recursive: true, force: true });
  }
}

// -------------------------------------------------------------------- main --
async function main(argv) {
  const [cmd, ...rest] = argv;
  const opt = (name, dflt) => {
    const i = rest.indexOf(name);
    return i >= 0 ? rest[i + 1] : dflt;
  };
  const cri = new Cri(SOCK);
  try {
    switch (cmd) {
      case 'version': {
        const v = await version(cri);
        out(`${v.runtime} ${v.version} CRI ${v.apiVersion}`);
        return 0;
      }
      case 'status': {
        const conds = await status(cri);
        for (const c of conds) out(`${c.type}=${c.status}${c.reason ? ` (${c.reason}: ${c.message})` : ''}`);
        return conds.length > 0 && conds.every((c) => c.status) ? 0 : 1;
      }
      case 'pods': {
        for (const p of await listPods(cri))
          out(`${p.id}\t${p.namespace}/${p.name}\t${p.ready ? 'READY' : 'NOTREADY'}`);
        return 0;
      }
      case 'rm-pods': {
        const pods = await listPods(cri);
        let failed = 0;
        for (const p of pods) {
          try {
            await removePod(cri, p.id);
            out(`removed pod ${p.id.slice(0, 12)} ${p.namespace}/${p.name}`);
          } catch (e) {
            failed++;
            err(`could not remove pod ${p.id.slice(0, 12)} ${p.namespace}/${p.name}: ${e.message}`);
          }
        }
        return failed ? 1 : 0;
      }
      case 'smoke':
        await smoke(cri, {
          image: opt('--image', 'docker.io/library/busybox:latest'),
          hook: opt('--hook', ''),
          hostPort: Number(opt('--host-port', '0')),
        });
        return 0;
      default:
        err('usage: cri.mjs version|status|pods|rm-pods|smoke [--image IMG] [--hook CMD] [--host-port N]');
        return 2;
    }
  } finally {
    cri.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    err(`cri.mjs: ${e.message}`);
    process.exit(1);
  },
);
