import { countStorePasskeys } from '../../src/auth/tables/passkeys.js';

/** What a host change needs to know of the store's passkeys, as the admin API and the command line hand it. */
export const hostChanges = { countPasskeys: countStorePasskeys, deploymentRpId: 'localhost' };
