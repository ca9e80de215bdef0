// The sign-in page script: plain browser JavaScript, no build step, no framework. It uses the
// public API exactly as any storefront page would: same-origin fetch, the session cookie kept by
// the browser, and the XSRF-TOKEN cookie echoed in an X-XSRF-TOKEN header on every POST.
import { accountArea } from './account.js';
import { passkeysArea } from './passkeys.js';
import { providersArea } from './providers.js';
import { language, ltr, t, tNodes } from './strings.js';

(() => {
  'use strict';

  const api = '/api/v1';
  const auth = `${api}/customer/auth`;
  const mode = document.body.dataset.identityMode === 'phone' ? 'phone' : 'email';
  const storeName = document.body.dataset.storeName;
  const statusBox = document.getElementById('status');
  const views = ['account', 'login', 'code', 'code-login', 'two-factor', 'register', 'verify', 'forgot', 'reset'];
  // Whether the store lets customers sign in with a code sent to them instead of a password.
  const signInWithCode = document.body.dataset.signInWithCode === 'true';

  // ---- The store's bot check ----------------------------------------------------------------

  // Rendered only when the store has one: the provider's widget, which keeps its token in a field
  // of its own inside the container. The operations it lists send that token as X-Captcha-Token.
  const botCheck = document.getElementById('bot-check');
  const botCheckPaths = {
    register: '/register',
    forgot: '/password/forgot',
    resend: '/verification/resend',
    code_request: '/code/request',
    identity_change: '/identity/change',
  };
  const checkedPaths = botCheck === null ? [] : botCheck.dataset.on.split(' ').map((name) => botCheckPaths[name]);
  const tokenFields = '[name="cf-turnstile-response"], [name="h-captcha-response"], [name="g-recaptcha-response"]';

  /** The widget's token for a request to `path`, when the store checks it; null otherwise. */
  function botCheckToken(path) {
    if (botCheck === null || !checkedPaths.some((end) => end !== undefined && path.endsWith(end))) return null;
    const field = botCheck.querySelector(tokenFields);
    return field !== null && field.value !== '' ? field.value : null;
  }

  /** A token is good for one check: the widget makes a new one for the next request. */
  function resetBotCheck() {
    for (const widget of [window.turnstile, window.hcaptcha, window.grecaptcha]) {
      try {
        widget?.reset();
      } catch {
        // Not loaded (yet), or nothing rendered to reset.
      }
    }
  }

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
    // Problem documents (titles, details, field messages) come back in the page's language.
    const headers = { accept: 'application/json', 'accept-language': language };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const token = readCookie('XSRF-TOKEN');
    if (method !== 'GET' && token !== null) headers['x-xsrf-token'] = token;
    const captcha = method === 'POST' ? botCheckToken(path) : null;
    if (captcha !== null) headers['x-captcha-token'] = captcha;
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
    } finally {
      if (captcha !== null) resetBotCheck();
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
    error.retryAfter === undefined ? t('errors.try_again_soon') : t('errors.try_again_in', { count: error.retryAfter });

  // Every error code the API can answer, in words for people. Forms may say it better in context.
  const messages = {
    validation_failed: () => t('errors.validation_failed'),
    identity_unavailable: () => t('identity.unavailable'),
    invalid_identity_challenge: () => t('errors.invalid_identity_challenge'),
    unauthenticated: () => t('errors.unauthenticated'),
    rate_limited: (error) => t('errors.rate_limited', { wait: tryAgain(error) }),
    store_unavailable: () => t('errors.store_unavailable'),
    csrf_token_mismatch: () => t('errors.csrf_token_mismatch'),
    untrusted_origin: () => t('errors.untrusted_origin'),
    service_unavailable: (error) => t('errors.service_unavailable', { wait: tryAgain(error) }),
    internal_error: (error) =>
      error.requestId
        ? t('errors.internal_error_reference', { reference: ltr(error.requestId) })
        : t('errors.internal_error'),
    network_error: () => t('errors.network_error'),
  };

  function describe(error, overrides = {}) {
    if (!(error instanceof ApiError)) return messages.internal_error({});
    const message = overrides[error.code] || messages[error.code];
    return message ? message(error) : t('errors.unknown', { code: ltr(error.code) });
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
      document.getElementById('closed-text').textContent = t('closed.text', { store: storeName });
      // A control that just became disabled drops the keyboard focus; keep it on the way out.
      if (focused instanceof HTMLElement && focused.matches(':disabled')) recheckButton.focus();
    } else {
      setStatus(t('closed.reopened', { store: storeName }), 'success');
      // The provider buttons, if the store could not list them while it was shut.
      void providers.loadStore();
    }
  }

  let sessionKnown = false;

  /** Asks the store again; whatever it answers opens or keeps shut the forms (see send). */
  async function recheck() {
    if (recheckButton.disabled) return;
    recheckButton.disabled = true;
    recheckButton.textContent = t('closed.checking');
    try {
      // Before the store first answered, the page does not know who is signed in: ask that.
      if (sessionKnown) await refreshToken().catch(() => {});
      else await loadSession();
    } finally {
      recheckButton.disabled = false;
      recheckButton.textContent = t('closed.recheck');
    }
  }

  // ---- Fields and views ---------------------------------------------------------------------

  function describedBy(input, id) {
    const ids = (input.getAttribute('aria-describedby') || '').split(' ').filter(Boolean);
    if (!ids.includes(id)) input.setAttribute('aria-describedby', [...ids, id].join(' '));
  }

  function setUpIdentityFields() {
    for (const input of document.querySelectorAll('.identity-input')) {
      input.type = mode === 'phone' ? 'tel' : 'email';
      input.setAttribute('autocomplete', mode === 'phone' ? 'tel' : 'email');
      if (input.name === 'email') input.name = mode; // registration names the field after the mode
      if (mode === 'phone') {
        const hint = document.createElement('p');
        hint.id = `${input.id}-hint`;
        hint.className = 'hint';
        hint.textContent = t('fields.phone_hint', { example: ltr('+44 7700 900123') });
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
        orphans.push(...list.map((message) => (field === 'body' ? message : t('errors.field', { field, message }))));
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
    setStatus(t('status.working'));
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
    // Messages to the customer (codes, notices) are written in the language the page is in.
    const customer = await call('POST', `${auth}/register`, { ...values, locale: language });
    form.reset();
    fill('verify-form', 'identity', customer.identity.value);
    show('verify');
    setStatus(t('status.registered', { identity: ltr(customer.identity.value) }), 'success');
  });

  onSubmit('verify-form', async (values, form) => {
    const customer = await call('POST', `${auth}/verify`, values);
    form.reset();
    fill('login-form', 'identity', customer.identity.value);
    show('login');
    setStatus(t('identity.verified'), 'success');
  });

  // ---- Signing in, in one or two steps ----------------------------------------------------

  /**
   * What a sign-in answered: a session (the account, welcomed), or a second step to take first
   * (`two_factor_required`: the store set an HttpOnly cookie of the pending sign-in; the page only
   * asks for the code that finishes it). Returns whether the customer is signed in.
   */
  function signedIn(session) {
    if (session !== null && session.auth_type === 'two_factor_required') {
      startSecondStep();
      setStatus(t('two_factor.step_needed'), 'success');
      return false;
    }
    showAccount(session.customer);
    setStatus(t('status.welcome', { name: session.customer.name }), 'success');
    return true;
  }

  const secondStepForm = document.getElementById('two-factor-form');
  let secondStepWith = 'totp'; // or 'recovery_code'

  /** The second step's form with either the app's code field or the recovery code's. */
  function secondStepMethod(method, focus = true) {
    secondStepWith = method;
    const recovery = method === 'recovery_code';
    clearFieldErrors(secondStepForm);
    document.getElementById('two-factor-app-field').hidden = recovery;
    document.getElementById('two-factor-app-intro').hidden = recovery;
    document.getElementById('two-factor-recovery-field').hidden = !recovery;
    document.getElementById('two-factor-recovery-intro').hidden = !recovery;
    document.getElementById('two-factor-use-recovery').hidden = recovery;
    document.getElementById('two-factor-use-app').hidden = !recovery;
    if (focus) document.getElementById(recovery ? 'two-factor-recovery-code' : 'two-factor-code').focus();
  }

  function startSecondStep() {
    secondStepForm.reset();
    show('two-factor', false);
    secondStepMethod('totp');
  }

  document.getElementById('two-factor-use-recovery').addEventListener('click', () => {
    setStatus('');
    secondStepMethod('recovery_code');
  });
  document.getElementById('two-factor-use-app').addEventListener('click', () => {
    setStatus('');
    secondStepMethod('totp');
  });

  // Digits typed on an Arabic keyboard are the same digits.
  const asciiDigits = (text) =>
    text
      .trim()
      .replace(/[\u0660-\u0669]/g, (digit) => String(digit.charCodeAt(0) - 0x660))
      .replace(/[\u06f0-\u06f9]/g, (digit) => String(digit.charCodeAt(0) - 0x6f0));

  onSubmit(
    'two-factor-form',
    async (values, form) => {
      const body =
        secondStepWith === 'recovery_code'
          ? { recovery_code: asciiDigits(values.recovery_code) }
          : { code: asciiDigits(values.code) };
      let session;
      try {
        session = await call('POST', `${auth}/two-factor/verify`, body);
      } catch (error) {
        // The pending sign-in is over (too many wrong codes, too late, or none): from the start.
        if (!(error instanceof ApiError) || error.code !== 'unauthenticated') throw error;
        form.reset();
        show('login');
        setStatus(t('two_factor.expired'), 'error');
        return;
      }
      form.reset();
      signedIn(session);
    },
    {
      validation_failed: () =>
        t(secondStepWith === 'recovery_code' ? 'two_factor.wrong_recovery' : 'two_factor.wrong_code'),
    },
  );

  onSubmit(
    'login-form',
    async (values, form) => {
      const session = await call('POST', `${auth}/login`, values);
      form.reset();
      signedIn(session);
    },
    {
      unauthenticated: () => t('identity.wrong_login'),
    },
  );

  // The store may stop allowing codes while the page is open: the calls then answer 404.
  const codesOff = {
    not_found: () => t('status.codes_off', { store: storeName }),
  };

  onSubmit(
    'code-request-form',
    async (values, form) => {
      await call('POST', `${auth}/code/request`, values);
      form.reset();
      fill('code-login-form', 'identity', values.identity);
      show('code-login');
      setStatus(t('status.code_sent', { identity: ltr(values.identity) }), 'success');
    },
    codesOff,
  );

  onSubmit(
    'code-login-form',
    async (values, form) => {
      const session = await call('POST', `${auth}/code/login`, values);
      form.reset();
      signedIn(session);
    },
    codesOff,
  );

  onSubmit('forgot-form', async (values, form) => {
    await call('POST', `${auth}/password/forgot`, values);
    form.reset();
    fill('reset-form', 'identity', values.identity);
    show('reset');
    setStatus(t('status.reset_sent', { identity: ltr(values.identity) }), 'success');
  });

  onSubmit('reset-form', async (values, form) => {
    await call('POST', `${auth}/password/reset`, values);
    form.reset();
    fill('login-form', 'identity', values.identity);
    show('login');
    setStatus(t('status.password_reset'), 'success');
  });

  const verifyForm = document.getElementById('verify-form');
  document.getElementById('resend').addEventListener('click', () => {
    const identity = verifyForm.elements.namedItem('identity').value;
    void run(verifyForm, async () => {
      await call('POST', `${auth}/verification/resend`, { identity });
      setStatus(t('status.resent', { identity: ltr(identity) }), 'success');
    });
  });

  // What account.js and passkeys.js use of the page, built once: they work through the same API
  // calls, messages and form handling as the rest, so the CSRF flow, the store-paused notice and
  // the error sentences are the page's. Each takes from it only the names it uses.
  const page = {
    auth,
    mode,
    storeName,
    language,
    t,
    tNodes,
    ltr,
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
    signedIn,
    asciiDigits,
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
        setStatus(t('status.signed_out'), 'success');
      } catch (error) {
        if (!(error instanceof ApiError) || error.code !== 'unauthenticated') throw error;
        setStatus(t('status.already_signed_out'), 'success');
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
    document.getElementById('code-path').hidden = false;
  }
  // A provider's sign-in of an account with two-step sign-in comes back with `?two_factor=required`:
  // the page asks for the second step (once: a reload or a bookmark does not ask again).
  const pageUrl = new URL(window.location.href);
  let secondStepWaiting = pageUrl.searchParams.get('two_factor') === 'required';
  if (pageUrl.searchParams.has('two_factor')) {
    pageUrl.searchParams.delete('two_factor');
    window.history.replaceState(window.history.state, '', `${pageUrl.pathname}${pageUrl.search}${pageUrl.hash}`);
  }

  /** Shows the account or the log-in form, as the store says who is signed in. */
  function loadSession() {
    return call('GET', `${auth}/session`)
      .then((session) => {
        sessionKnown = true;
        secondStepWaiting = false;
        showAccount(session.customer, false);
        providers.cameBack(session.customer);
      })
      .catch((error) => {
        const code = error instanceof ApiError ? error.code : '';
        if (code === 'unauthenticated') sessionKnown = true;
        if (code === 'unauthenticated' && secondStepWaiting) {
          secondStepWaiting = false;
          startSecondStep();
          setStatus(t('two_factor.step_needed'), 'success');
          return;
        }
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
