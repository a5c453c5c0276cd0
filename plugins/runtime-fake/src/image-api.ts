/** The fake runtime's ImageService. */
import {
  type ImageFsInfoRequest,
  type ImageFsInfoResponse,
  type ImageStatusRequest,
  type ImageStatusResponse,
  type ListImagesRequest,
  type ListImagesResponse,
  type PullImageRequest,
  type PullImageResponse,
  type RemoveImageRequest,
  type RemoveImageResponse,
} from '@nodelet/cri';
import { toImageMessage } from './image-store.js';
import { IMAGE_FS_MOUNTPOINT } from './records.js';
import { StatsApi } from './stats-api.js';

export abstract class ImageApi extends StatsApi {
  async listImages(req: ListImagesRequest): Promise<ListImagesResponse> {
    this.check();
    const wanted = req.filter?.image?.image;
    if (wanted) {
      const record = this.images.resolve(wanted);
      return { images: record ? [toImageMessage(record)] : [] };
    }
    return { images: this.images.list().map(toImageMessage) };
  }

  async imageStatus(req: ImageStatusRequest): Promise<ImageStatusResponse> {
    this.check();
    const record = this.images.resolve(req.image?.image ?? '');
    return { image: record && toImageMessage(record), info: {} };
  }

  async pullImage(req: PullImageRequest): Promise<PullImageResponse> {
    this.check();
    const record = await this.images.pull(req.image?.image ?? '');
    return { imageRef: record.id };
  }

  async removeImage(req: RemoveImageRequest): Promise<RemoveImageResponse> {
    this.check();
    this.images.remove(req.image?.image ?? '');
    return {};
  }

  async imageFsInfo(_req?: ImageFsInfoRequest): Promise<ImageFsInfoResponse> {
    this.check();
    return {
      imageFilesystems: [
        {
          timestamp: this.nowNs(),
          fsId: { mountpoint: IMAGE_FS_MOUNTPOINT },
          usedBytes: { value: this.images.usedBytes() },
          inodesUsed: { value: BigInt(this.images.count) * 100n },
        },
      ],
      containerFilesystems: [],
    };
  }
}
