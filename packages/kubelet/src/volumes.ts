// kuberuntime/container.ts imports VolumeError from here; the volume manager lives in ./volume/.
export { VolumeError } from './volume/volume-error.js';
