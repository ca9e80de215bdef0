import type { StoreQueryable } from '../storage/database.js';
import type { MessageTemplate, TemplatedMessage } from './message-templates.js';

/** This module owns the `store_templates` table: a store's own words for its emails. */

export interface StoredTemplate extends MessageTemplate {
  message: TemplatedMessage;
  language: string;
  updatedAt: string;
}

type Row = {
  message: TemplatedMessage;
  language: string;
  subject: string;
  text_body: string;
  html_body: string;
  updated_at: Date;
};

const toTemplate = (row: Row): StoredTemplate => ({
  message: row.message,
  language: row.language,
  subject: row.subject,
  text: row.text_body,
  html: row.html_body,
  updatedAt: new Date(row.updated_at).toISOString(),
});

const columns = 'message, language, subject, text_body, html_body, updated_at';

/** The store's template of a message in a language; null: the built-in words. */
export async function findTemplate(
  db: StoreQueryable,
  message: TemplatedMessage,
  language: string,
): Promise<StoredTemplate | null> {
  const [row] = await db.query<Row>(
    `SELECT ${columns} FROM store_templates WHERE store_id = $1 AND message = $2 AND language = $3`,
    [db.storeId, message, language],
  );
  return row === undefined ? null : toTemplate(row);
}

/** Every template the store has, by message and language. */
export async function listTemplates(db: StoreQueryable): Promise<StoredTemplate[]> {
  const rows = await db.query<Row>(
    `SELECT ${columns} FROM store_templates WHERE store_id = $1 ORDER BY message, language`,
    [db.storeId],
  );
  return rows.map(toTemplate);
}

export async function saveTemplate(
  db: StoreQueryable,
  message: TemplatedMessage,
  language: string,
  template: MessageTemplate,
  now: Date,
): Promise<StoredTemplate> {
  const [row] = await db.query<Row>(
    `INSERT INTO store_templates (store_id, message, language, subject, text_body, html_body, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (store_id, message, language) DO UPDATE
       SET subject = EXCLUDED.subject, text_body = EXCLUDED.text_body, html_body = EXCLUDED.html_body,
           updated_at = EXCLUDED.updated_at
     RETURNING ${columns}`,
    [db.storeId, message, language, template.subject, template.text, template.html, now],
  );
  return toTemplate(row!);
}

/** Removes the template (the built-in words return); whether there was one. */
export async function deleteTemplate(
  db: StoreQueryable,
  message: TemplatedMessage,
  language: string,
): Promise<boolean> {
  const rows = await db.query(
    'DELETE FROM store_templates WHERE store_id = $1 AND message = $2 AND language = $3 RETURNING 1',
    [db.storeId, message, language],
  );
  return rows.length === 1;
}
