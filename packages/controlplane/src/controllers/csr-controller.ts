import type { Clock, Logger } from '@nodelet/kernel';
import type { Registry } from '../apiserver/registry.js';
import { rfc3339, type KubeObject } from '../object.js';
import { csrSignatureValid, type KeyPair, parseCsr, signCsr } from '../pki.js';
import {
  apiServerClientSigner,
  certificateSigningRequests,
  kubeletClientSigner,
  kubeletServingSigner,
} from '../resources/certificates.js';
import type { AuthorizationChain } from '../authorization/chain.js';
import { WorkQueue } from './work-queue.js';

/**
 * Upstream's csrapproving and csrsigning controllers for kubelet client and serving certificates:
 *
 * - **approve** a pending request for signer `kubernetes.io/kube-apiserver-client-kubelet` whose CSR is
 *   exactly `CN=system:node:<name>, O=system:nodes` with client-auth usages and no alternative names,
 *   when its requestor is a bootstrap token (`nodeclient`) or that very node renewing (`selfnodeclient`);
 *   anything else stays Pending for an administrator (`kubectl certificate approve`);
 * - **approve** a `kubernetes.io/kubelet-serving` request only from the node it names (requestor
 *   `system:node:<name>` in `system:nodes`, CN the same), with DNS/IP names only and server-auth usages
 *   (upstream leaves these to an external approver; nodelet approves its own nodes' as kubeadm users do);
 * - **sign** approved requests of the kube-apiserver-client signers with the cluster CA, for
 *   `spec.expirationSeconds` (default one year, never beyond the CA), or mark them Failed when the CSR
 *   breaks the signer's rules.
 */
export class CsrController {
  private readonly queue: WorkQueue;
  private unsubscribe?: () => void;
  private static readonly defaultDurationMs = 365 * 24 * 3600 * 1000;

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly ca: KeyPair,
    /** Asked, as upstream's approver asks a SubjectAccessReview, whether the requestor may have a kubelet
     * client certificate approved (`create certificatesigningrequests/nodeclient|selfnodeclient`). */
    private readonly authorizer: AuthorizationChain,
  ) {
    this.queue = new WorkQueue('csr', (name) => this.sync(name), clock, logger);
  }

  start(): void {
    const store = this.registry.store;
    this.unsubscribe = store.subscribe(certificateSigningRequests.storage, (e) => {
      if (e.op !== 'delete') this.queue.add(e.name);
    });
    for (const csr of store.listAll(certificateSigningRequests.storage))
      this.queue.add(csr.object.metadata.name!);
  }

  stop(): void {
    this.unsubscribe?.();
    this.queue.stop();
  }

  private get(name: string): KubeObject | undefined {
    return this.registry.store.get(certificateSigningRequests.storage, '', name)?.object;
  }

  private async sync(name: string): Promise<void> {
    const csr = this.get(name);
    if (!csr || csr.status?.certificate) return;
    const decided = (type: string) =>
      ((csr.status?.conditions ?? []) as { type?: string; status?: string }[]).some(
        (c) => c.type === type && c.status !== 'False',
      );
    if (decided('Denied') || decided('Failed')) return;
    const signer = csr.spec?.signerName;
    const serving = signer === kubeletServingSigner;
    if (signer !== kubeletClientSigner && signer !== apiServerClientSigner && !serving) return; // another signer's
    const pem = Buffer.from(String(csr.spec?.request ?? ''), 'base64').toString('utf8');
    const problem =
      signer === kubeletClientSigner
        ? await kubeletClientProblem(csr, pem)
        : serving
          ? await kubeletServingProblem(csr, pem)
          : undefined;
    if (!decided('Approved')) {
      const rule = problem ? undefined : autoApprovalRule(csr, this.authorizer);
      if (rule) this.approve(csr, rule);
      return; // the approval's own write brings the request back here to be signed
    }
    if (problem) return this.fail(csr, problem);
    const seconds = csr.spec?.expirationSeconds;
    const durationMs = typeof seconds === 'number' ? seconds * 1000 : CsrController.defaultDurationMs;
    const usage = serving ? 'server' : 'client';
    const certificate = await signCsr(this.ca, pem, durationMs, this.clock.now(), usage);
    this.write(name, 'status', (current) => ({
      ...current,
      status: { ...(current.status ?? {}), certificate: Buffer.from(certificate).toString('base64') },
    }));
    this.logger.info('signed a certificate', { csr: name, user: csr.spec?.username, signer });
  }

  private approve(csr: KubeObject, rule: ApprovalRule): void {
    const name = csr.metadata.name!;
    this.write(name, 'approval', (current) => ({
      ...current,
      status: {
        ...(current.status ?? {}),
        conditions: [
          ...((current.status?.conditions ?? []) as object[]),
          {
            type: 'Approved',
            status: 'True',
            reason: 'AutoApproved',
            message: approvalMessages[rule],
            lastUpdateTime: rfc3339(this.clock.now()),
            lastTransitionTime: rfc3339(this.clock.now()),
          },
        ],
      },
    }));
    this.logger.info('approved a certificate signing request', { csr: name, user: csr.spec?.username, rule });
  }

  private fail(csr: KubeObject, message: string): void {
    const name = csr.metadata.name!;
    this.write(name, 'status', (current) => ({
      ...current,
      status: {
        ...(current.status ?? {}),
        conditions: [
          ...((current.status?.conditions ?? []) as object[]),
          {
            type: 'Failed',
            status: 'True',
            reason: 'SignerValidationFailure',
            message,
            lastUpdateTime: rfc3339(this.clock.now()),
            lastTransitionTime: rfc3339(this.clock.now()),
          },
        ],
      },
    }));
    this.logger.info('refused to sign a certificate signing request', { csr: name, reason: message });
  }

  /** Writes through the subresource's strategy, as an API client would. */
  private write(
    name: string,
    subresource: 'status' | 'approval',
    change: (csr: KubeObject) => KubeObject,
  ): void {
    const current = this.get(name);
    if (!current) return;
    this.registry.update(certificateSigningRequests, '', name, change(structuredClone(current)), {
      subresource,
    });
  }
}

/** Why a CSR breaks the kubelet client signer's rules, or undefined when it follows them. */
async function kubeletClientProblem(csr: KubeObject, pem: string): Promise<string | undefined> {
  let info;
  try {
    info = parseCsr(pem);
  } catch (err) {
    return `the request is not a PEM certificate request: ${(err as Error).message}`;
  }
  if (!(await csrSignatureValid(pem))) return 'the request is not signed by the key it carries';
  if (!info.commonName.startsWith('system:node:') || info.commonName === 'system:node:') {
    return `subject common name must begin with "system:node:", got ${JSON.stringify(info.commonName)}`;
  }
  if (info.organizations.length !== 1 || info.organizations[0] !== 'system:nodes') {
    return `subject organization must be exactly ["system:nodes"], got ${JSON.stringify(info.organizations)}`;
  }
  if (info.dnsNames.length || info.ipAddresses.length || info.emailAddresses.length || info.uris.length) {
    return 'a kubelet client certificate may not have subject alternative names';
  }
  const usages = (csr.spec?.usages ?? []) as string[];
  const allowed = ['digital signature', 'key encipherment', 'client auth'];
  if (!usages.includes('client auth') || usages.some((u) => !allowed.includes(u))) {
    return `usages must include "client auth" and be among ${JSON.stringify(allowed)}, got ${JSON.stringify(usages)}`;
  }
  return undefined;
}

type ApprovalRule = 'nodeclient' | 'selfnodeclient' | 'selfnodeserving';

const approvalMessages: Record<ApprovalRule, string> = {
  nodeclient: 'Auto approving kubelet client certificate after SubjectAccessReview.',
  selfnodeclient: 'Auto approving self kubelet client certificate after SubjectAccessReview.',
  selfnodeserving: 'Auto approving kubelet serving certificate of its own node.',
};

/** Why a CSR breaks upstream's kubelet-serving signer rules (IsKubeletServingCSR), or undefined. */
async function kubeletServingProblem(csr: KubeObject, pem: string): Promise<string | undefined> {
  let info;
  try {
    info = parseCsr(pem);
  } catch (err) {
    return `the request is not a PEM certificate request: ${(err as Error).message}`;
  }
  if (!(await csrSignatureValid(pem))) return 'the request is not signed by the key it carries';
  if (!info.commonName.startsWith('system:node:') || info.commonName === 'system:node:') {
    return `subject common name must begin with "system:node:", got ${JSON.stringify(info.commonName)}`;
  }
  if (info.organizations.length !== 1 || info.organizations[0] !== 'system:nodes') {
    return `subject organization must be exactly ["system:nodes"], got ${JSON.stringify(info.organizations)}`;
  }
  if (info.emailAddresses.length || info.uris.length) {
    return 'a kubelet serving certificate may only have DNS and IP subject alternative names';
  }
  if (!info.dnsNames.length && !info.ipAddresses.length) {
    return 'a kubelet serving certificate needs at least one DNS or IP subject alternative name';
  }
  const usages = (csr.spec?.usages ?? []) as string[];
  const allowed = ['digital signature', 'key encipherment', 'server auth'];
  if (!usages.includes('server auth') || usages.some((u) => !allowed.includes(u))) {
    return `usages must include "server auth" and be among ${JSON.stringify(allowed)}, got ${JSON.stringify(usages)}`;
  }
  return undefined;
}

/**
 * Which auto-approval rule covers the requestor, if any: a node's own renewal (selfnodeclient) or a
 * bootstrap request (nodeclient), each only when the authorizer lets the requestor `create` that
 * subresource of certificatesigningrequests, as upstream's sarapprove does.
 */
function autoApprovalRule(csr: KubeObject, authorizer: AuthorizationChain): ApprovalRule | undefined {
  const groups = (csr.spec?.groups ?? []) as string[];
  const pem = Buffer.from(String(csr.spec?.request ?? ''), 'base64').toString('utf8');
  const self = groups.includes('system:nodes') && csr.spec?.username === parseCsr(pem).commonName;
  if (csr.spec?.signerName === kubeletServingSigner) return self ? 'selfnodeserving' : undefined;
  if (csr.spec?.signerName !== kubeletClientSigner) return undefined;
  const candidates: ApprovalRule[] = self ? ['selfnodeclient', 'nodeclient'] : ['nodeclient'];
  const user = {
    name: String(csr.spec?.username ?? ''),
    groups,
    ...(csr.spec?.uid ? { uid: String(csr.spec.uid) } : {}),
  };
  return candidates.find(
    (rule) =>
      authorizer.authorize({
        user,
        verb: 'create',
        resourceRequest: true,
        path: '',
        apiGroup: 'certificates.k8s.io',
        apiVersion: '*',
        resource: 'certificatesigningrequests',
        subresource: rule,
        namespace: '',
        name: '',
      }).decision === 'allow',
  );
}
