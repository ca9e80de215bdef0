import { createHash } from 'node:crypto';
import type { Queryable } from '../storage/database.js';
import { FieldError } from './fields.js';

/** This module owns `store_logos`: a store's uploaded logo, and the rules of what may be one. */

export const maxLogoBytes = 256 * 1024;

/** The path a store's uploaded logo is served at on its hosts; the digest names its version. */
export const uploadedLogoPath = '/brand/logo';

export interface StoreLogo {
  contentType: string;
  image: Buffer;
  digest: string;
}

// What each type's file starts with: the declared type must be what the bytes are. No SVG: an
// SVG is a document that can hold script.
const signatures: Record<string, (bytes: Buffer) => boolean> = {
  'image/png': (bytes) => bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/jpeg': (bytes) => bytes.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff])),
  'image/webp': (bytes) =>
    bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP',
};
export const logoTypes = Object.keys(signatures);

/** An upload checked: its type one of PNG, JPEG or WebP and its bytes of that type, its size bounded. */
export function checkedLogo(contentType: string, image: Buffer): StoreLogo {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  const matches = signatures[type];
  if (matches === undefined) throw new FieldError(`must be one of ${logoTypes.join(', ')}`);
  if (image.length === 0 || image.length > maxLogoBytes)
    throw new FieldError(`must be 1 byte to ${maxLogoBytes / 1024} KiB; this one is ${image.length} bytes`);
  if (!matches(image)) throw new FieldError(`is not a ${type} file: its first bytes say otherwise`);
  return { contentType: type, image, digest: createHash('sha256').update(image).digest('hex').slice(0, 16) };
}

export async function saveLogo(db: Queryable, storeId: string, logo: StoreLogo, now: Date): Promise<void> {
  await db.query(
    `INSERT INTO store_logos (store_id, content_type, image, digest, updated_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (store_id) DO UPDATE SET content_type = EXCLUDED.content_type, image = EXCLUDED.image,
       digest = EXCLUDED.digest, updated_at = EXCLUDED.updated_at`,
    [storeId, logo.contentType, logo.image, logo.digest, now],
  );
}

export async function findLogo(db: Queryable, storeId: string): Promise<StoreLogo | null> {
  const [row] = await db.query<{ content_type: string; image: Buffer; digest: string }>(
    'SELECT content_type, image, digest FROM store_logos WHERE store_id = $1',
    [storeId],
  );
  return row === undefined ? null : { contentType: row.content_type, image: row.image, digest: row.digest };
}

export async function deleteLogo(db: Queryable, storeId: string): Promise<boolean> {
  return (await db.query('DELETE FROM store_logos WHERE store_id = $1 RETURNING 1', [storeId])).length === 1;
}

/** The logo URL the store's branding names for an upload: its path, versioned by its digest. */
export function uploadedLogoUrl(digest: string): string {
  return `${uploadedLogoPath}?v=${digest}`;
}
