/**
 * What the three outbound hops (PostgreSQL, Redis, SMTP) share about TLS: telling a refused
 * certificate apart from other connection failures, so the operator reads "certificate" and looks
 * at the CA file and the host name instead of the network.
 */

/**
 * Node's codes for a peer certificate that failed verification: OpenSSL's verify results, and
 * the host name check (`ERR_TLS_CERT_ALTNAME_INVALID`).
 */
const certificateCodes = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * When `error` (or an error it wraps) is a certificate the client refused, the reason in one
 * line, such as `certificate verification failed: self-signed certificate in certificate chain`;
 * otherwise undefined. nodemailer keeps Node's code as `originalCode`.
 */
export function certificateFailure(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth += 1) {
    const { code, originalCode } = current as { code?: unknown; originalCode?: unknown };
    if (
      (typeof code === 'string' && certificateCodes.has(code)) ||
      (typeof originalCode === 'string' && certificateCodes.has(originalCode))
    )
      return `certificate verification failed: ${current.message}`;
    current = current.cause;
  }
  return undefined;
}
