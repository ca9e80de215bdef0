/** The types of legacy-hashes.cjs: password hashes made by other systems, checked until re-hashed. */

/** How a hash of a known format is checked (the hashing thread reads it; the main thread only its format). */
export type LegacyCheck = { kind: string } & Record<string, unknown>;

export type DescribedHash = { format: string; check: LegacyCheck } | { refused: string };

/** What a stored hash is and how to check it, or why an import refuses it. */
export function describeLegacyHash(hash: string): DescribedHash;

/** Whether the password is the one the hash was made from; throws for a hash in no known format. */
export function verifyLegacyHash(hash: string, password: string): boolean;

export const legacyHashLimits: {
  bcryptCost: number;
  pbkdf2Iterations: number;
  phpassLog2: number;
  memoryKib: number;
  argon2Passes: number;
  argon2Lanes: number;
};
