/**
 * The store module: a store's context and rules (context.ts), reads (reads.ts), changes
 * (writes.ts, hosts.ts). Together they are the one owner of `stores` and `store_hosts`; the rest
 * of the service imports them from here.
 */
export {
  botCheckOperations,
  botCheckProviders,
  firstStoreId,
  mergeLanguages,
  normalizeHost,
  requestHost,
  storeOrigins,
  storeSlugPattern,
  storeStatuses,
  twoFactorModes,
  type BotCheck,
  type BotCheckOperation,
  type BotCheckProvider,
  type Branding,
  type NewStore,
  type StoreChanges,
  type StoreContext,
  type StoreLanguages,
  type StoreStatus,
  type TwoFactorMode,
} from './context.js';
export {
  deploymentStores,
  findStoreNamed,
  latestStoreVersion,
  listStores,
  loadStore,
  onlyStore,
  storeChangesAfter,
  type DeploymentStores,
  type OnlyStore,
  type StoreChange,
  type StoreKey,
} from './reads.js';
export {
  announceStoreChange,
  createStore,
  deletedStores,
  dropStoreRow,
  ensureStore,
  identityModesInUse,
  insertStore,
  markStoreDeleted,
  updateStore,
  type CookieDomainRefusal,
  type HostUnderCookieDomain,
  type StoreCreateResult,
  type StoreUpdateOptions,
  type StoreUpdateResult,
} from './writes.js';
export { addStoreHost, removeStoreHost, type HostChangeOptions, type HostChangeResult } from './hosts.js';
