import type { SubjectAccessReview, TokenReview } from '@nodelet/client';

export type { SubjectAccessReview, TokenReview };

/**
 * The two reviews the kubelet asks the API server for (authentication.k8s.io/v1 TokenReview,
 * authorization.k8s.io/v1 SubjectAccessReview). The kubelet's API client (KubeApi) has them; tests
 * pass a stub.
 */
export interface ReviewClient {
  createTokenReview(review: TokenReview): Promise<TokenReview>;
  createSubjectAccessReview(review: SubjectAccessReview): Promise<SubjectAccessReview>;
}
