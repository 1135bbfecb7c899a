/**
 * What a failed open or read of a body file says: the body is not there (`missing`), the entry at its name is
 * something the store never writes and cannot serve, whatever is retried (`refused`: a symbolic link, a
 * directory, a file it may not read), or the store itself cannot be used right now (`outage`).
 *
 * `missing` and `refused` hold only where the store's marker file proves the directory is the store: the same
 * codes from an unmounted volume or a directory that lost its permissions are an outage (the caller checks).
 */
export type FileReadFailure = 'missing' | 'refused' | 'outage';

/**
 * Codes about the one entry the message names. Body names have no `/`, so ENOTDIR can only come from the
 * configured directory, which the marker check then reports as an outage.
 */
const ENTRY_CODES = new Set([
  'ELOOP', // a symbolic link, refused by O_NOFOLLOW
  'EISDIR',
  'ENOTDIR',
  'EACCES',
  'EPERM',
  'ENXIO', // a socket, or a FIFO without a writer
  'ENODEV', // a device special file
  'ETXTBSY',
  'EFBIG',
  'EOVERFLOW',
]);

/**
 * Classifies a failure of `open()`, `fstat()` or `read()` on a body file. Everything else is an outage: EIO and
 * ESTALE (the disk or the network file system), EMFILE and ENFILE (this process or machine out of descriptors,
 * which passes when others close: refusing good messages for it would dead-letter them by the thousand),
 * ENOMEM, EAGAIN, EBUSY, ETIMEDOUT, and any code not known here.
 */
export function fileReadFailure(error: unknown): FileReadFailure {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') return 'missing';
  return code !== undefined && ENTRY_CODES.has(code) ? 'refused' : 'outage';
}
