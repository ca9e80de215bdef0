// The sign-in page script: plain browser JavaScript, no build step, no framework. It uses the
// public API exactly as any storefront page would: same-origin fetch, the session cookie kept by
// the browser, and the XSRF-TOKEN cookie echoed in an X-XSRF-TOKEN header on every POST.
import { accountArea } from './account.js';
import { passkeysArea } from './passkeys.js';
import { providersArea } from './providers.js';

(() => {
  'use strict';

  const api = '/api/v1';
  const auth = `${api}/customer/auth`;
  const mode = document.body.dataset.identityMode === 'phone' ? 'phone' : 'email';
  const noun = mode === 'phone' ? 'phone number' : 'email address';
  const storeName = document.body.dataset.storeName;
  const statusBox = document.getElementById('status');
  const views = ['account', 'login', 'code', 'code-login', 'register', 'verify', 'forgot', 'reset'];
  // Whether the store lets customers sign in with a code sent to them instead of a password.
  const signInWithCode = document.body.dataset.signInWithCode === 'true';

  // ---- The API ------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, errors, retryAfter, requestId) {
      super(code);
      this.status = status;
      this.code = code;
      this.errors = errors || {};
      this.retryAfter = retryAfter;
      this.requestId = requestId;
    }
  }

  function readCookie(name) {
    for (const part of document.cookie.split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
    }
    return null;
  }

  /** Retry-After in whole seconds (it may also be an HTTP date), or undefined. */
  function retryAfterSeconds(header) {
    if (header === null) return undefined;
    const seconds = /^\d+$/.test(header.trim()) ? Number(header) : (Date.parse(header) - Date.now()) / 1000;
    return Number.isFinite(seconds) ? Math.max(1, Math.ceil(seconds)) : undefined;
  }

  /**
   * One request: the parsed body on success (or, when `raw`, the response and its text), an
   * ApiError otherwise.
   */
  async function send(method, path, body, raw = false) {
    const headers = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const token = readCookie('XSRF-TOKEN');
    if (method !== 'GET' && token !== null) headers['x-xsrf-token'] = token;
    let response;
    try {
      response = await fetch(path, {
        method,
        headers,
        credentials: 'same-origin',
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch {
      throw new ApiError(0, 'network_error');
    }
    const text = await response.text().catch(() => '');
    let parsed = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      // Not JSON: a proxy's error page, for instance. Judged by the status below.
    }
    const problem = parsed !== null && typeof parsed === 'object' ? parsed : {};
    // Every answer tells whether the store takes sign-ins: 503 store_unavailable shuts the forms,
    // and any answer the store itself gave (below 500) opens them again.
    if (problem.code === 'store_unavailable') setStoreShut(true);
    else if (response.status < 500) setStoreShut(false);
    if (response.ok) return raw ? { response, text } : parsed;
    throw new ApiError(
      response.status,
      typeof problem.code === 'string'
        ? problem.code
        : response.status >= 500
          ? 'service_unavailable'
          : 'internal_error',
      problem.errors,
      retryAfterSeconds(response.headers.get('retry-after')),
      typeof problem.request_id === 'string' ? problem.request_id : response.headers.get('x-request-id'),
    );
  }

  const refreshToken = () => send('GET', `${api}/csrf-cookie`);

  /** A request with the CSRF dance: fetch a token when there is none, and refresh it once on a 419. */
  async function call(method, path, body) {
    if (method === 'GET') return send(method, path);
    if (readCookie('XSRF-TOKEN') === null) await refreshToken();
    try {
      return await send(method, path, body);
    } catch (error) {
      if (!(error instanceof ApiError) || error.code !== 'csrf_token_mismatch') throw error;
      await refreshToken(); // stale, missing or from another session: one more try with a fresh one
      return send(method, path, body);
    }
  }

  // ---- Messages -----------------------------------------------------------------------------

  const tryAgain = (error) =>
    error.retryAfter === undefined
      ? 'Try again in a moment.'
      : `Try again in ${error.retryAfter} second${error.retryAfter === 1 ? '' : 's'}.`;

  // Every error code the API can answer, in words for people. Forms may say it better in context.
  const messages = {
    validation_failed: () => 'Some fields need another look; see the messages next to them.',
    identity_unavailable: () =>
      `This ${noun} cannot be used for a new account. If it is yours, log in or reset your password.`,
    invalid_identity_challenge: () =>
      'That code is wrong, has expired or was already used. Check it, or ask for a new code.',
    unauthenticated: () => 'You are not signed in.',
    rate_limited: (error) => `Too many attempts. ${tryAgain(error)}`,
    store_unavailable: () => 'The store is closed right now. Please come back later.',
    csrf_token_mismatch: () => 'This page has expired. Reload it and try again.',
    untrusted_origin: () =>
      'The store did not accept this request from this page. Open the store’s own sign-in page and try again.',
    service_unavailable: (error) => `The store cannot answer right now. ${tryAgain(error)}`,
    internal_error: (error) =>
      `Something went wrong on our side. Please try again.${error.requestId ? ` (Reference: ${error.requestId})` : ''}`,
    network_error: () => 'We could not reach the store. Check your connection and try again.',
  };

  function describe(error, overrides = {}) {
    if (!(error instanceof ApiError)) return messages.internal_error({});
    const message = overrides[error.code] || messages[error.code];
    return message ? message(error) : `Something went wrong (${error.code}). Please try again.`;
  }

  function setStatus(text, kind = '') {
    statusBox.textContent = text;
    statusBox.className = kind;
  }

  // ---- A paused or closed store ------------------------------------------------------------

  const closedBox = document.getElementById('closed');
  const recheckButton = document.getElementById('recheck');
  let storeShut = false;

  /** Every control that would call the store: the forms and the account area's buttons. */
  const storeControls = () =>
    document.querySelectorAll('main form input, main form button, #account button, #passkey-path button');

  function setStoreShut(shut) {
    if (shut === storeShut) return;
    storeShut = shut;
    const focused = document.activeElement;
    for (const control of storeControls()) control.disabled = shut;
    closedBox.hidden = !shut;
    if (shut) {
      document.getElementById('closed-text').textContent =
        `${storeName} is not taking sign-ins right now. Please try again later.`;
      // A control that just became disabled drops the keyboard focus; keep it on the way out.
      if (focused instanceof HTMLElement && focused.matches(':disabled')) recheckButton.focus();
    } else {
      setStatus(`${storeName} is taking sign-ins again.`, 'success');
      // The provider buttons, if the store could not list them while it was shut.
      void providers.loadStore();
    }
  }

  let sessionKnown = false;

  /** Asks the store again; whatever it answers opens or keeps shut the forms (see send). */
  async function recheck() {
    if (recheckButton.disabled) return;
    recheckButton.disabled = true;
    recheckButton.textContent = 'Checking…';
    try {
      // Before the store first answered, the page does not know who is signed in: ask that.
      if (sessionKnown) await refreshToken().catch(() => {});
      else await loadSession();
    } finally {
      recheckButton.disabled = false;
      recheckButton.textContent = 'Check again';
    }
  }

  // ---- Fields and views ---------------------------------------------------------------------

  function describedBy(input, id) {
    const ids = (input.getAttribute('aria-describedby') || '').split(' ').filter(Boolean);
    if (!ids.includes(id)) input.setAttribute('aria-describedby', [...ids, id].join(' '));
  }

  function setUpIdentityFields() {
    for (const label of document.querySelectorAll('.identity-label')) {
      label.textContent = mode === 'phone' ? 'Phone number' : 'Email address';
    }
    for (const span of document.querySelectorAll('.identity-noun')) span.textContent = noun;
    for (const input of document.querySelectorAll('.identity-input')) {
      input.type = mode === 'phone' ? 'tel' : 'email';
      input.setAttribute('autocomplete', mode === 'phone' ? 'tel' : 'email');
      if (input.name === 'email') input.name = mode; // registration names the field after the mode
      if (mode === 'phone') {
        const hint = document.createElement('p');
        hint.id = `${input.id}-hint`;
        hint.className = 'hint';
        hint.textContent = 'In international form: + and the country code, for example +44 7700 900123.';
        input.after(hint);
        describedBy(input, hint.id);
      }
    }
  }

  // Every field gets a place for its server-side errors, announced with the field.
  function setUpFieldErrors() {
    for (const input of document.querySelectorAll('.field input')) {
      const box = document.createElement('p');
      box.id = `${input.id}-error`;
      box.className = 'field-error';
      box.hidden = true;
      input.closest('.field').append(box);
      describedBy(input, box.id);
    }
  }

  function clearFieldErrors(form) {
    for (const input of form.querySelectorAll('input')) {
      input.removeAttribute('aria-invalid');
      const box = document.getElementById(`${input.id}-error`);
      if (box) {
        box.textContent = '';
        box.hidden = true;
      }
    }
  }

  /** Shows each field's messages next to it; returns the messages no field of the form owns. */
  function showFieldErrors(form, errors) {
    const orphans = [];
    let first = null;
    for (const [field, list] of Object.entries(errors)) {
      const input = form.elements ? form.elements.namedItem(field) : null;
      const box = input instanceof HTMLInputElement ? document.getElementById(`${input.id}-error`) : null;
      if (box === null) {
        orphans.push(...list.map((message) => (field === 'body' ? message : `${field}: ${message}`)));
        continue;
      }
      box.textContent = list.join(' ');
      box.hidden = false;
      input.setAttribute('aria-invalid', 'true');
      first ??= input;
    }
    first?.focus();
    return orphans;
  }

  function show(view, focus = true) {
    const signedIn = view === 'account';
    document.getElementById('views').hidden = signedIn;
    for (const id of views) document.getElementById(id).hidden = id !== view;
    // The log-in form offers passkeys in its identity field while it is shown, and only then.
    if (view === 'login') void passkeys.startAutofill();
    else passkeys.stopAutofill();
    for (const button of document.querySelectorAll('#views [data-view]')) {
      if (button.dataset.view === view) button.setAttribute('aria-current', 'page');
      else button.removeAttribute('aria-current');
    }
    // Leaving the account area forgets what was typed there (passwords among it).
    if (!signedIn) {
      account.reset();
      passkeys.reset();
      providers.reset();
    }
    if (!focus) return;
    const section = document.getElementById(view);
    // The account area is a page of its own forms, none of them the obvious first step.
    const empty = signedIn ? undefined : [...section.querySelectorAll('input')].find((input) => input.value === '');
    (empty || section.querySelector('h2')).focus();
  }

  function fill(formId, field, value) {
    document.getElementById(formId).elements.namedItem(field).value = value;
  }

  function showAccount(customer, focus = true) {
    account.update(customer);
    show('account', focus);
    void account.load();
    if (passkeys.on) void passkeys.load();
    void providers.load(customer);
  }

  // ---- Actions ------------------------------------------------------------------------------

  /** Runs one submission: clears old errors, marks the form busy, shows any failure in words. */
  async function run(form, work, overrides) {
    clearFieldErrors(form);
    setStatus('Working…');
    form.setAttribute('aria-busy', 'true');
    for (const button of form.querySelectorAll('button')) button.disabled = true;
    try {
      await work();
    } catch (error) {
      if (error instanceof ApiError && error.code === 'store_unavailable') {
        setStatus(''); // the notice of the shut store says it, once
        return;
      }
      // The session ended elsewhere (another device revoked it, the password changed there).
      if (error instanceof ApiError && error.code === 'unauthenticated' && account.section.contains(form)) {
        account.signedOutElsewhere();
        return;
      }
      const orphans = error instanceof ApiError ? showFieldErrors(form, error.errors) : [];
      setStatus([describe(error, overrides), ...orphans].join(' '), 'error');
    } finally {
      form.removeAttribute('aria-busy');
      for (const button of form.querySelectorAll('button')) button.disabled = storeShut;
    }
  }

  function onSubmit(formId, action, overrides) {
    const form = document.getElementById(formId);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const values = Object.fromEntries(new FormData(form));
      void run(form, () => action(values, form), overrides);
    });
  }

  onSubmit('register-form', async (values, form) => {
    const customer = await call('POST', `${auth}/register`, values);
    form.reset();
    fill('verify-form', 'identity', customer.identity.value);
    show('verify');
    setStatus(`Account created. We sent a code to ${customer.identity.value}; enter it below.`, 'success');
  });

  onSubmit('verify-form', async (values, form) => {
    const customer = await call('POST', `${auth}/verify`, values);
    form.reset();
    fill('login-form', 'identity', customer.identity.value);
    show('login');
    setStatus(`Your ${noun} is verified. You can log in now.`, 'success');
  });

  onSubmit(
    'login-form',
    async (values, form) => {
      const session = await call('POST', `${auth}/login`, values);
      form.reset();
      showAccount(session.customer);
      setStatus(`Welcome, ${session.customer.name}. You are signed in.`, 'success');
    },
    {
      unauthenticated: () => `The ${noun} or password is not right. Check them and try again.`,
    },
  );

  // The store may stop allowing codes while the page is open: the calls then answer 404.
  const codesOff = {
    not_found: () => `${storeName} does not offer signing in with a code right now. Log in with your password.`,
  };

  onSubmit(
    'code-request-form',
    async (values, form) => {
      await call('POST', `${auth}/code/request`, values);
      form.reset();
      fill('code-login-form', 'identity', values.identity);
      show('code-login');
      setStatus(`If an account uses ${values.identity}, we sent it a sign-in code; enter it below.`, 'success');
    },
    codesOff,
  );

  onSubmit(
    'code-login-form',
    async (values, form) => {
      const session = await call('POST', `${auth}/code/login`, values);
      form.reset();
      showAccount(session.customer);
      setStatus(`Welcome, ${session.customer.name}. You are signed in.`, 'success');
    },
    codesOff,
  );

  onSubmit('forgot-form', async (values, form) => {
    await call('POST', `${auth}/password/forgot`, values);
    form.reset();
    fill('reset-form', 'identity', values.identity);
    show('reset');
    setStatus(
      `If an account uses ${values.identity}, we sent it a reset code; enter it below with your new password.`,
      'success',
    );
  });

  onSubmit('reset-form', async (values, form) => {
    await call('POST', `${auth}/password/reset`, values);
    form.reset();
    fill('login-form', 'identity', values.identity);
    show('login');
    setStatus('Your password is changed and every device was signed out. Log in with your new password.', 'success');
  });

  const verifyForm = document.getElementById('verify-form');
  document.getElementById('resend').addEventListener('click', () => {
    const identity = verifyForm.elements.namedItem('identity').value;
    void run(verifyForm, async () => {
      await call('POST', `${auth}/verification/resend`, { identity });
      setStatus(
        `If ${identity} still needs verifying, a new code is on its way. Earlier codes no longer work.`,
        'success',
      );
    });
  });

  // What account.js and passkeys.js use of the page, built once: they work through the same API
  // calls, messages and form handling as the rest, so the CSRF flow, the store-paused notice and
  // the error sentences are the page's. Each takes from it only the names it uses.
  const page = {
    auth,
    mode,
    noun,
    storeName,
    ApiError,
    call,
    send,
    describe,
    tryAgain,
    setStatus,
    clearFieldErrors,
    run,
    /** The XSRF-TOKEN cookie's value, for a link start (a navigation carries no header). */
    csrfToken: () => readCookie('XSRF-TOKEN'),
    onSubmit,
    show,
    showAccount,
    isStoreShut: () => storeShut,
  };
  const account = accountArea(page);
  // Passkeys: their list sits in the account area, their sign-in by the log-in form.
  const passkeys = passkeysArea(page, account);
  // Sign-in providers: their buttons by the log-in and registration forms, their list in the account area.
  const providers = providersArea(page, account);

  document.getElementById('logout').addEventListener('click', () => {
    void run(account.section, async () => {
      try {
        await call('POST', `${auth}/logout`);
        setStatus('You are signed out.', 'success');
      } catch (error) {
        if (!(error instanceof ApiError) || error.code !== 'unauthenticated') throw error;
        setStatus('You were already signed out.', 'success');
      }
      show('login');
    });
  });

  document.getElementById('views').addEventListener('click', (event) => {
    const button = event.target.closest('[data-view]');
    if (button === null) return;
    setStatus('');
    show(button.dataset.view);
  });
  // Links between views inside the sections (reset code, sign-in code, back to the password).
  for (const link of document.querySelectorAll('main section [data-view]')) {
    link.addEventListener('click', () => {
      setStatus('');
      show(link.dataset.view);
    });
  }

  // ---- Start --------------------------------------------------------------------------------

  setUpIdentityFields();
  setUpFieldErrors();
  passkeys.setUp();
  if (signInWithCode) {
    document.getElementById('code-path-button').textContent =
      mode === 'phone' ? 'Text me a code instead' : 'Email me a code instead';
    document.getElementById('code-path').hidden = false;
  }
  /** Shows the account or the log-in form, as the store says who is signed in. */
  function loadSession() {
    return call('GET', `${auth}/session`)
      .then((session) => {
        sessionKnown = true;
        showAccount(session.customer, false);
        providers.cameBack(session.customer);
      })
      .catch((error) => {
        const code = error instanceof ApiError ? error.code : '';
        if (code === 'unauthenticated') sessionKnown = true;
        // Before the first answer no view is shown yet; later, the shopper's view is kept.
        if (views.every((id) => document.getElementById(id).hidden)) show('login', false);
        if (code !== 'unauthenticated' && code !== 'store_unavailable') setStatus(describe(error), 'error');
        else providers.cameBack(null);
      });
  }

  recheckButton.addEventListener('click', () => void recheck());
  // A shopper coming back to the tab sees the store as it is now, without pressing anything.
  window.addEventListener('focus', () => {
    if (storeShut) void recheck();
  });

  document.body.setAttribute('aria-busy', 'true');
  void Promise.all([loadSession(), providers.loadStore()]).finally(() => document.body.removeAttribute('aria-busy'));
})();
