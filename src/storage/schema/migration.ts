/** One step of the schema: applied once, in version order, inside the migration lock. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}
