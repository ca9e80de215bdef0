export type Channel = 'email' | 'sms';
export type MessagePurpose =
  | 'verification'
  | 'password_reset'
  | 'invitation'
  | 'password_changed'
  | 'account_deleted'
  | 'sign_in'
  | 'new_sign_in'
  | 'identity_change'
  | 'identity_taken'
  | 'identity_changed'
  | 'passkey_added'
  | 'two_factor_on'
  | 'two_factor_off'
  | 'recovery_code_used'
  | 'provider_linked';

/** What of a store's look its emails show (the store's branding; delivery sits below the store). */
export interface MessageBranding {
  logoUrl: string | null;
  primaryColour: string | null;
  supportUrl: string | null;
}

export interface MessageContent {
  /** The language it is written in (a language tag of locales/): `Content-Language`, the SMS hook's `language`. */
  language: string;
  subject: string;
  text: string;
  html: string;
}

/** The store a message comes from, as its transport names it. */
export interface MessageSender {
  storeId: string;
  storeName: string;
  /** The store's own From line; null: the deployment's address under the store's name. */
  mailFrom: string | null;
  /** The label the SMS hook is given as `sender`. */
  smsSender: string | null;
}

export interface OutgoingMessage {
  id: string;
  from: MessageSender;
  channel: Channel;
  purpose: MessagePurpose;
  to: string;
  content: MessageContent;
}

/** One way of sending: the log, an SMTP server, the SMS provider hook. Throwing means "retry later". */
export interface Transport {
  readonly name: string;
  send(message: OutgoingMessage): Promise<void>;
  close?(): Promise<void>;
}

export type Transports = Record<Channel, Transport>;
