// Image references are parsed in @nodelet/cri, which the kubelet shares (its credential keyring matches
// the normalised repository); this module keeps the fake runtime's imports where they were.
export { isImageId, normalizeImageRef, parseImageRef, type ImageRef } from '@nodelet/cri';
