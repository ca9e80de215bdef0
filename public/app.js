// The sign-in page script: plain browser JavaScript, no build step, no framework. It uses the
// public API exactly as any storefront page would: same-origin fetch, the session cookie kept by
// the browser, and the XSRF-TOKEN cookie echoed in an X-XSRF-TOKEN header on every POST.
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
  // Whether the store offers passkeys and this browser can use them (SimpleWebAuthnBrowser is the
  // bundle the service serves at /vendor/simplewebauthn-browser.js, loaded before this script).
  const webauthn = window.SimpleWebAuthnBrowser;
  const passkeysOn =
    document.body.dataset.passkeys === 'true' && webauthn !== undefined && webauthn.browserSupportsWebAuthn();

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
    if (view === 'login') void startPasskeyAutofill();
    else stopPasskeyAutofill();
    for (const button of document.querySelectorAll('#views [data-view]')) {
      if (button.dataset.view === view) button.setAttribute('aria-current', 'page');
      else button.removeAttribute('aria-current');
    }
    // Leaving the account area forgets what was typed there (passwords among it).
    if (!signedIn) resetAccount();
    if (!focus) return;
    const section = document.getElementById(view);
    // The account area is a page of its own forms, none of them the obvious first step.
    const empty = signedIn ? undefined : [...section.querySelectorAll('input')].find((input) => input.value === '');
    (empty || section.querySelector('h2')).focus();
  }

  function fill(formId, field, value) {
    document.getElementById(formId).elements.namedItem(field).value = value;
  }

  /** The customer's name and identity wherever the account area shows them. */
  function updateAccount(customer) {
    document.getElementById('account-name').textContent = customer.name;
    document.getElementById('account-identity').textContent = customer.identity.value;
    document.getElementById('account-unverified').hidden = customer.identity.verified_at !== null;
    document.getElementById('profile-name').value = customer.name;
  }

  function showAccount(customer, focus = true) {
    updateAccount(customer);
    show('account', focus);
    void loadSessions();
    if (passkeysOn) void loadPasskeys();
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
      if (error instanceof ApiError && error.code === 'unauthenticated' && accountSection.contains(form)) {
        signedOutElsewhere();
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

  // ---- The account area ---------------------------------------------------------------------

  const accountSection = document.getElementById('account');
  const sessionsSection = document.getElementById('sessions');
  const sessionsList = document.getElementById('sessions-list');
  const identityChangeForm = document.getElementById('identity-change-form');
  const identityConfirmForm = document.getElementById('identity-confirm-form');
  const deleteStart = document.getElementById('delete-start');
  const deleteForm = document.getElementById('delete-form');

  /** Clears every form of the account area and returns the two-step ones to their first step. */
  function resetAccount() {
    for (const form of accountSection.querySelectorAll('form')) {
      form.reset();
      clearFieldErrors(form);
    }
    identityStep(false);
    deleteStep(false);
    sessionsList.replaceChildren();
    passkeysList.replaceChildren();
  }

  function signedOutElsewhere() {
    show('login');
    setStatus('You are no longer signed in on this device. Log in again.', 'error');
  }

  // The device in a few words, as the service's new-sign-in notice names it: no versions, and the
  // first match wins (Edge, Opera and Samsung Internet also claim Chrome; Chrome claims Safari).
  const browserNames = [
    [/\bEdg(?:e|A|iOS)?\//, 'Edge'],
    [/\bOPR\/|\bOpera\b/, 'Opera'],
    [/\bSamsungBrowser\//, 'Samsung Internet'],
    [/\bFirefox\/|\bFxiOS\//, 'Firefox'],
    [/\bChrome\/|\bCriOS\/|\bChromium\//, 'Chrome'],
    [/\bSafari\//, 'Safari'],
  ];
  const systemNames = [
    [/\bWindows\b/, 'Windows'],
    [/\bAndroid\b/, 'Android'],
    [/\b(?:iPhone|iPad|iPod)\b/, 'iOS'],
    [/\bCrOS\b/, 'ChromeOS'],
    [/\bMac OS X\b|\bMacintosh\b/, 'macOS'],
    [/\bLinux\b/, 'Linux'],
  ];
  function deviceWords(userAgent) {
    const agent = userAgent || '';
    const name = (list, fallback) => list.find(([pattern]) => pattern.test(agent))?.[1] ?? fallback;
    return `${name(browserNames, 'Unknown browser')} on ${name(systemNames, 'unknown system')}`;
  }

  function timeOf(iso) {
    const element = document.createElement('time');
    element.dateTime = iso;
    element.textContent = new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
    return element;
  }

  /** A list item's action: a secondary button described by the item's own words. */
  function itemButton(text, describedById, onClick) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'secondary';
    button.textContent = text;
    button.setAttribute('aria-describedby', describedById);
    button.disabled = storeShut;
    button.addEventListener('click', onClick);
    return button;
  }

  /** One session as a list item: device, network, when; a Revoke button unless it is this one. */
  function sessionItem(session) {
    const item = document.createElement('li');
    const device = document.createElement('p');
    device.id = `session-${session.id}`;
    const words = deviceWords(session.client.user_agent);
    const name = document.createElement('strong');
    name.textContent = words;
    device.append(name);
    if (session.current) {
      const mark = document.createElement('span');
      mark.className = 'current';
      mark.textContent = 'This device';
      device.append(' ', mark);
    }
    const details = document.createElement('p');
    details.className = 'hint';
    details.append(
      `Network ${session.client.address || 'unknown'} · signed in `,
      timeOf(session.created_at),
      ' · last seen ',
      timeOf(session.last_seen_at),
    );
    item.append(device, details);
    if (!session.current) item.append(itemButton('Revoke', device.id, () => revokeSession(session.id, words)));
    return item;
  }

  async function refreshSessions() {
    const { sessions } = await call('GET', `${auth}/sessions`);
    sessionsList.replaceChildren(...sessions.map(sessionItem));
  }

  /**
   * Fills one of the account area's lists on entering it; a failure is said, the area stays. A 404
   * hides the list: the store stopped offering what it shows.
   */
  async function loadList(section, refresh, what) {
    section.setAttribute('aria-busy', 'true');
    try {
      await refresh();
    } catch (error) {
      const code = error instanceof ApiError ? error.code : '';
      if (code === 'unauthenticated') signedOutElsewhere();
      else if (code === 'not_found') section.hidden = true;
      else if (code !== 'store_unavailable') setStatus(`${what} could not be listed. ${describe(error)}`, 'error');
    } finally {
      section.removeAttribute('aria-busy');
    }
  }

  function loadSessions() {
    return loadList(sessionsSection, refreshSessions, 'Your devices');
  }

  function revokeSession(id, words) {
    void run(sessionsSection, async () => {
      try {
        await call('POST', `${auth}/sessions/${encodeURIComponent(id)}/revoke`);
        setStatus(`${words} is signed out.`, 'success');
      } catch (error) {
        if (!(error instanceof ApiError) || error.code !== 'not_found') throw error;
        setStatus('That device was already signed out.', 'success');
      }
      await refreshSessions();
      // Its button is gone with it: keep the keyboard in the list.
      document.getElementById('sessions-title').focus();
    });
  }

  document.getElementById('revoke-others').addEventListener('click', () => {
    void run(sessionsSection, async () => {
      const { count } = await call('POST', `${auth}/sessions/revoke-others`);
      setStatus(
        count === 0
          ? 'No other device was signed in.'
          : `Signed out ${count} other device${count === 1 ? '' : 's'}. This one stays signed in.`,
        'success',
      );
      await refreshSessions();
    });
  });

  // ---- Passkeys ------------------------------------------------------------------------------

  const passkeysSection = document.getElementById('passkeys');
  const passkeysList = document.getElementById('passkeys-list');

  /** What the browser's side of a ceremony refused, in words (the API's refusals say their own). */
  function ceremonyMessage(error, adding) {
    if (error && error.code === 'ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED')
      return 'This device already has a passkey for your account.';
    if (error && (error.name === 'NotAllowedError' || error.name === 'AbortError'))
      return adding
        ? 'No passkey was added: it was cancelled or took too long.'
        : 'Signing in with a passkey was cancelled.';
    return adding ? 'This browser could not make a passkey.' : 'This browser could not use a passkey.';
  }

  /** One passkey as a list item: its name, when it was added and last used, and a Remove button. */
  function passkeyItem(passkey) {
    const item = document.createElement('li');
    const title = document.createElement('p');
    title.id = `passkey-${passkey.id}`;
    const name = document.createElement('strong');
    name.textContent = passkey.name;
    title.append(name);
    const details = document.createElement('p');
    details.className = 'hint';
    details.append('Added ', timeOf(passkey.created_at), ' · ');
    if (passkey.last_used_at === null) details.append('not used yet');
    else details.append('last used ', timeOf(passkey.last_used_at));
    item.append(
      title,
      details,
      itemButton('Remove', title.id, () => removePasskey(passkey.id, passkey.name)),
    );
    return item;
  }

  async function refreshPasskeys() {
    const { passkeys } = await call('GET', `${auth}/passkeys`);
    passkeysList.replaceChildren(...passkeys.map(passkeyItem));
    document.getElementById('passkeys-empty').hidden = passkeys.length > 0;
  }

  function loadPasskeys() {
    passkeysSection.hidden = false;
    return loadList(passkeysSection, refreshPasskeys, 'Your passkeys');
  }

  // The store may stop offering passkeys while the page is open: the calls then answer 404.
  const passkeysOff = {
    not_found: () => `${storeName} does not offer passkeys right now.`,
  };

  document.getElementById('passkey-add').addEventListener('click', () => {
    void run(
      passkeysSection,
      async () => {
        const optionsJSON = await call('POST', `${auth}/passkeys/register/options`);
        let credential;
        try {
          credential = await webauthn.startRegistration({ optionsJSON });
        } catch (error) {
          setStatus(ceremonyMessage(error, true), 'error');
          return;
        }
        const passkey = await call('POST', `${auth}/passkeys/register`, { credential });
        await refreshPasskeys();
        setStatus(`Passkey added: ${passkey.name}. Next time, sign in with it instead of your password.`, 'success');
      },
      { ...passkeysOff, validation_failed: () => 'The passkey could not be checked. Try adding it again.' },
    );
  });

  function removePasskey(id, name) {
    void run(passkeysSection, async () => {
      try {
        await call('POST', `${auth}/passkeys/${encodeURIComponent(id)}/delete`);
        setStatus(`Passkey removed: ${name}. It can no longer sign in to your account.`, 'success');
      } catch (error) {
        if (!(error instanceof ApiError) || error.code !== 'not_found') throw error;
        setStatus('That passkey was already removed.', 'success');
      }
      await refreshPasskeys();
      // Its button is gone with it: keep the keyboard in the section.
      document.getElementById('passkeys-title').focus();
    });
  }

  /** Options, the browser's ceremony and the sign-in; `autofill` waits for a pick in the identity field. */
  async function signInWithPasskey(autofill) {
    const optionsJSON = await call('POST', `${auth}/passkeys/login/options`);
    const credential = await webauthn.startAuthentication({ optionsJSON, useBrowserAutofill: autofill });
    const session = await call('POST', `${auth}/passkeys/login`, { credential });
    document.getElementById('login-form').reset();
    showAccount(session.customer);
    setStatus(`Welcome, ${session.customer.name}. You are signed in.`, 'success');
  }

  const passkeyRefused = {
    ...passkeysOff,
    unauthenticated: () => 'That passkey could not sign you in. It may have been removed; log in with your password.',
  };

  // The identity field offers the device's passkeys for this store as it is focused (conditional
  // UI). At most one such request waits at a time; leaving the form cancels it.
  let autofillWaiting = false;
  async function startPasskeyAutofill() {
    if (!passkeysOn || autofillWaiting || !(await webauthn.browserSupportsWebAuthnAutofill())) return;
    autofillWaiting = true;
    try {
      await signInWithPasskey(true);
    } catch (error) {
      // Cancelled (the form was left, or the button started a ceremony of its own): nothing to say.
      if (error instanceof ApiError && error.code !== 'store_unavailable')
        setStatus(describe(error, passkeyRefused), 'error');
    } finally {
      autofillWaiting = false;
    }
  }
  function stopPasskeyAutofill() {
    if (autofillWaiting) webauthn.WebAuthnAbortService.cancelCeremony();
  }

  const passkeyPath = document.getElementById('passkey-path');
  document.getElementById('passkey-login').addEventListener('click', () => {
    void run(
      passkeyPath,
      async () => {
        try {
          await signInWithPasskey(false);
        } catch (error) {
          if (error instanceof ApiError) throw error;
          setStatus(ceremonyMessage(error, false), 'error');
        }
      },
      passkeyRefused,
    );
  });

  onSubmit('password-change-form', async (values, form) => {
    // The answer brings a new session cookie and CSRF token; the browser keeps both.
    await call('POST', `${auth}/password/change`, values);
    form.reset();
    setStatus('Your password is changed. Every other device was signed out; this one stays signed in.', 'success');
    await refreshSessions();
  });

  onSubmit('profile-form', async (values) => {
    const customer = await call('POST', `${auth}/profile`, values);
    updateAccount(customer);
    setStatus(`Your name is now ${customer.name}.`, 'success');
  });

  function identityStep(confirming) {
    identityChangeForm.hidden = confirming;
    identityConfirmForm.hidden = !confirming;
  }

  onSubmit('identity-change-form', async (values, form) => {
    await call('POST', `${auth}/identity/change`, values);
    form.reset();
    identityStep(true);
    document.getElementById('identity-confirm-code').focus();
    setStatus(
      `We sent a code to ${values[mode]}; enter it below. If that ${noun} already has an account, it gets a message saying so instead, and nothing changes.`,
      'success',
    );
  });

  onSubmit(
    'identity-confirm-form',
    async (values, form) => {
      const customer = await call('POST', `${auth}/identity/confirm`, values);
      form.reset();
      identityStep(false);
      updateAccount(customer);
      document.getElementById('identity-change-title').focus();
      setStatus(`Your account now uses ${customer.identity.value}. Every other device was signed out.`, 'success');
      await refreshSessions();
    },
    { identity_unavailable: () => `That ${noun} has an account of its own now, so yours cannot move to it.` },
  );

  document.getElementById('identity-change-restart').addEventListener('click', () => {
    identityConfirmForm.reset();
    clearFieldErrors(identityConfirmForm);
    identityStep(false);
    setStatus('');
    document.getElementById('identity-change-value').focus();
  });

  // Fetched rather than linked, so a refusal (too soon, signed out, store shut) is a sentence on the
  // page instead of a broken download; the file is the service's answer, byte for byte.
  const exportSection = document.getElementById('export');
  document.getElementById('export-button').addEventListener('click', () => {
    void run(
      exportSection,
      async () => {
        const { response, text } = await send('GET', `${auth}/account/export`, undefined, true);
        const disposition = response.headers.get('content-disposition') || '';
        const filename = /filename="([^"\\/]+)"/.exec(disposition)?.[1] || 'account-export.json';
        const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
        const link = document.createElement('a');
        link.href = url;
        link.download = filename;
        link.hidden = true;
        document.body.append(link);
        link.click();
        link.remove();
        // The browser has read the URL once the click returns; it is released a little later all the same.
        setTimeout(() => URL.revokeObjectURL(url), 60_000);
        setStatus(`Your data is downloading as ${filename}.`, 'success');
      },
      { rate_limited: (error) => `Your data was downloaded a moment ago. ${tryAgain(error)}` },
    );
  });

  function deleteStep(confirming) {
    deleteStart.hidden = confirming;
    deleteForm.hidden = !confirming;
  }

  deleteStart.addEventListener('click', () => {
    deleteStep(true);
    document.getElementById('delete-password').focus();
  });

  document.getElementById('delete-cancel').addEventListener('click', () => {
    deleteForm.reset();
    clearFieldErrors(deleteForm);
    deleteStep(false);
    setStatus('Your account is kept.', 'success');
    deleteStart.focus();
  });

  onSubmit('delete-form', async (values) => {
    await call('POST', `${auth}/account/delete`, values);
    show('login');
    setStatus(
      `Your account and everything it held are deleted, and every device is signed out. You can create a new account with the same ${noun} at any time.`,
      'success',
    );
  });

  document.getElementById('logout').addEventListener('click', () => {
    void run(accountSection, async () => {
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
  if (passkeysOn) {
    // Lets the browser offer passkeys among the identity field's suggestions (conditional UI).
    document.getElementById('login-identity').setAttribute('autocomplete', 'username webauthn');
    passkeyPath.hidden = false;
  }
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
      })
      .catch((error) => {
        const code = error instanceof ApiError ? error.code : '';
        if (code === 'unauthenticated') sessionKnown = true;
        // Before the first answer no view is shown yet; later, the shopper's view is kept.
        if (views.every((id) => document.getElementById(id).hidden)) show('login', false);
        if (code !== 'unauthenticated' && code !== 'store_unavailable') setStatus(describe(error), 'error');
      });
  }

  recheckButton.addEventListener('click', () => void recheck());
  // A shopper coming back to the tab sees the store as it is now, without pressing anything.
  window.addEventListener('focus', () => {
    if (storeShut) void recheck();
  });

  document.body.setAttribute('aria-busy', 'true');
  void loadSession().finally(() => document.body.removeAttribute('aria-busy'));
})();
