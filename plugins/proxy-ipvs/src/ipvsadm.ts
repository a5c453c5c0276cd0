import { serviceSpec, type VirtualServer } from './render.js';

/** A virtual server as `ipvsadm-save -n` shows it. */
export interface SavedVirtualServer {
  spec: string;
  address: string;
  scheduler: string;
  persistence: number;
  reals: Map<string, number>;
}

/** Parses `ipvsadm-save -n` (`-A -t 10.96.0.10:80 -s rr [-p 600]`, `-a -t … -r 10.244.1.10:8080 -m -w 1`). */
export function parseIpvsadmSave(text: string): Map<string, SavedVirtualServer> {
  const out = new Map<string, SavedVirtualServer>();
  for (const line of text.split('\n')) {
    const vs = /^-A (-[tuf]|--sctp-service) (\S+) -s (\S+)(?: -p (\d+))?/.exec(line.trim());
    if (vs) {
      const spec = `${vs[1]} ${vs[2]}`;
      out.set(spec, {
        spec,
        address: vs[2]!.replace(/:\d+$/, ''),
        scheduler: vs[3]!,
        persistence: Number(vs[4] ?? 0),
        reals: new Map(),
      });
      continue;
    }
    const rs = /^-a (-[tuf]|--sctp-service) (\S+) -r (\S+)(?: -[gmi])?(?: -w (\d+))?/.exec(line.trim());
    if (rs) out.get(`${rs[1]} ${rs[2]}`)?.reals.set(rs[3]!, Number(rs[4] ?? 1));
  }
  return out;
}

/**
 * The `ipvsadm --restore` commands that turn `current` into `desired`: add, edit and delete virtual
 * servers and real servers. Virtual servers in `current` are deleted only when `owned` says they are
 * ours (an address on kube-ipvs0 or a node-port address), so other IPVS users are left alone.
 */
export function ipvsadmDiff(
  current: Map<string, SavedVirtualServer>,
  desired: readonly VirtualServer[],
  owned: (vs: SavedVirtualServer) => boolean,
): string[] {
  const out: string[] = [];
  const wanted = new Map(desired.map((vs) => [serviceSpec(vs), vs]));
  for (const [spec, vs] of current) if (!wanted.has(spec) && owned(vs)) out.push(`-D ${spec}`);
  for (const [spec, vs] of wanted) {
    const sched = `-s ${vs.scheduler}${vs.persistence ? ` -p ${vs.persistence}` : ''}`;
    const cur = current.get(spec);
    if (!cur) {
      out.push(`-A ${spec} ${sched}`);
    } else if (cur.scheduler !== vs.scheduler || cur.persistence !== vs.persistence) {
      out.push(`-E ${spec} ${sched}`);
    }
    const want = new Map(vs.realServers.map((r) => [`${r.address}:${r.port}`, r.weight]));
    for (const [addr] of cur?.reals ?? []) if (!want.has(addr)) out.push(`-d ${spec} -r ${addr}`);
    for (const [addr, weight] of want) {
      const had = cur?.reals.get(addr);
      if (had === undefined) out.push(`-a ${spec} -r ${addr} -m -w ${weight}`);
      else if (had !== weight) out.push(`-e ${spec} -r ${addr} -m -w ${weight}`);
    }
  }
  return out;
}
