import type { Argon2Parameters } from '../../src/auth/rules/password.js';

/** The service's hashing code path at a cost fit for tests that do not measure hashing. */
export const testArgon2: Argon2Parameters = { memoryCost: 1024, timeCost: 1, parallelism: 1 };
