/** A volume that could not be set up or torn down; the message says which and why. */
export class VolumeError extends Error {
  override name = 'VolumeError';
}
