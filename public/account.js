// The account area of the sign-in page: the shopper's devices, password, name, email or phone,
// data export and account deletion. Plain browser JavaScript like app.js, which builds it and
// hands it the page's API calls, messages and form handling, so every call here goes through the
// same CSRF flow, store-paused notice and error sentences. Everything is written with textContent
// and DOM nodes, never HTML strings, so a name or an identity is shown as the characters it is.

/** Wires the account area's controls; returns what the rest of the page needs from it. */
export function accountArea(page) {
  const {
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
    onSubmit,
    show,
    asciiDigits,
    isStoreShut,
  } = page;

  /** The customer's name and identity wherever the account area shows them, and the forms their password allows. */
  function updateAccount(customer) {
    const name = document.createElement('strong');
    name.id = 'account-name';
    name.textContent = customer.name;
    // An email or a phone number reads left to right inside a right-to-left sentence too.
    const identity = document.createElement('bdi');
    identity.id = 'account-identity';
    identity.dir = 'ltr';
    identity.textContent = customer.identity.value;
    document.getElementById('account-signed-in').replaceChildren(...tNodes('account.signed_in_as', { name, identity }));
    document.getElementById('account-unverified').hidden = customer.identity.verified_at !== null;
    document.getElementById('profile-name').value = customer.name;
    accountIdentity = customer.identity.value;
    showPasswordForms(customer.has_password !== false);
  }

  const accountSection = document.getElementById('account');
  const sessionsSection = document.getElementById('sessions');
  const sessionsList = document.getElementById('sessions-list');
  const identityChangeForm = document.getElementById('identity-change-form');
  const identityConfirmForm = document.getElementById('identity-confirm-form');
  const deleteStart = document.getElementById('delete-start');
  const deleteForm = document.getElementById('delete-form');
  const passwordSetRequestForm = document.getElementById('password-set-request-form');
  const passwordSetForm = document.getElementById('password-set-form');
  // The signed-in identity, where a code to set a password goes.
  let accountIdentity = '';
  let hasPassword = true;
  let identityConfirming = false;
  let deleteConfirming = false;

  /**
   * An account without a password (made by a provider, or by a sign-in code) cannot answer the
   * calls that ask for the current password (change it, change the identity, delete the account):
   * it is offered a code to set one instead, and told why the others wait for it.
   */
  function showPasswordForms(has) {
    hasPassword = has;
    document.getElementById('password-change').hidden = !has;
    document.getElementById('password-set').hidden = has;
    document.getElementById('identity-change-needs-password').hidden = has;
    document.getElementById('delete-needs-password').hidden = has;
    // The passkey form asks for the password only of an account that has one.
    document.getElementById('passkey-add-password').closest('.field').hidden = !has;
    // So do the two-step sign-in forms.
    for (const id of ['two-factor-setup-password', 'two-factor-new-codes-password', 'two-factor-off-password'])
      document.getElementById(id).closest('.field').hidden = !has;
    identityStep(identityConfirming);
    deleteStep(deleteConfirming);
  }

  /** Clears every form of the account area and returns the two-step ones to their first step. */
  function resetAccount() {
    for (const form of accountSection.querySelectorAll('form')) {
      form.reset();
      clearFieldErrors(form);
    }
    identityStep(false);
    deleteStep(false);
    passwordSetStep(false);
    sessionsList.replaceChildren();
    resetTwoFactor();
  }

  function signedOutElsewhere() {
    show('login');
    setStatus(t('status.signed_out_elsewhere'), 'error');
  }

  function timeOf(iso) {
    const element = document.createElement('time');
    element.dateTime = iso;
    element.textContent = new Date(iso).toLocaleString(language, { dateStyle: 'medium', timeStyle: 'short' });
    return element;
  }

  /** A list item's action: a secondary button described by the item's own words. */
  function itemButton(text, describedById, onClick) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'secondary';
    button.textContent = text;
    button.setAttribute('aria-describedby', describedById);
    button.disabled = isStoreShut();
    button.addEventListener('click', onClick);
    return button;
  }

  /** One session as a list item: device, network, when; a Revoke button unless it is this one. */
  function sessionItem(session) {
    const item = document.createElement('li');
    const device = document.createElement('p');
    device.id = `session-${session.id}`;
    const words = session.client.device;
    const name = document.createElement('strong');
    name.textContent = words;
    device.append(name);
    if (session.current) {
      const mark = document.createElement('span');
      mark.className = 'current';
      mark.textContent = t('account.this_device');
      device.append(' ', mark);
    }
    const details = document.createElement('p');
    details.className = 'hint';
    const address = document.createElement('bdi');
    if (session.client.address) {
      address.dir = 'ltr';
      address.textContent = session.client.address;
    } else address.textContent = t('account.unknown_network');
    details.append(
      ...tNodes('account.session_details', {
        address,
        created: timeOf(session.created_at),
        seen: timeOf(session.last_seen_at),
      }),
    );
    item.append(device, details);
    if (!session.current)
      item.append(itemButton(t('account.revoke'), device.id, () => revokeSession(session.id, words)));
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
  async function loadList(section, refresh, failedKey) {
    section.setAttribute('aria-busy', 'true');
    try {
      await refresh();
    } catch (error) {
      const code = error instanceof ApiError ? error.code : '';
      if (code === 'unauthenticated') signedOutElsewhere();
      else if (code === 'not_found') section.hidden = true;
      else if (code !== 'store_unavailable') setStatus(t(failedKey, { reason: describe(error) }), 'error');
    } finally {
      section.removeAttribute('aria-busy');
    }
  }

  function loadSessions() {
    return loadList(sessionsSection, refreshSessions, 'status.sessions_failed');
  }

  function revokeSession(id, words) {
    void run(sessionsSection, async () => {
      try {
        await call('POST', `${auth}/sessions/${encodeURIComponent(id)}/revoke`);
        setStatus(t('status.revoked', { device: words }), 'success');
      } catch (error) {
        if (!(error instanceof ApiError) || error.code !== 'not_found') throw error;
        setStatus(t('status.already_revoked'), 'success');
      }
      await refreshSessions();
      // Its button is gone with it: keep the keyboard in the list.
      document.getElementById('sessions-title').focus();
    });
  }

  document.getElementById('revoke-others').addEventListener('click', () => {
    void run(sessionsSection, async () => {
      const { count } = await call('POST', `${auth}/sessions/revoke-others`);
      setStatus(count === 0 ? t('status.no_others') : t('status.others_revoked', { count }), 'success');
      await refreshSessions();
    });
  });

  onSubmit('password-change-form', async (values, form) => {
    // The answer brings a new session cookie and CSRF token; the browser keeps both.
    await call('POST', `${auth}/password/change`, values);
    form.reset();
    setStatus(t('status.password_changed'), 'success');
    await refreshSessions();
  });

  function passwordSetStep(entering) {
    passwordSetRequestForm.hidden = entering;
    passwordSetForm.hidden = !entering;
  }

  /** A reset code to the account's own identity: what a forgotten password gets, asked from here. */
  async function sendPasswordCode() {
    await call('POST', `${auth}/password/forgot`, { identity: accountIdentity });
    const sent = t('status.password_set_sent', { identity: ltr(accountIdentity) });
    // Said next to the code field too: on a phone the status line may be scrolled out of sight.
    document.getElementById('password-set-sent').textContent = sent;
    setStatus(sent, 'success');
  }

  onSubmit('password-set-request-form', async () => {
    await sendPasswordCode();
    passwordSetStep(true);
    document.getElementById('password-set-code').focus();
  });

  onSubmit('password-set-form', async (values) => {
    const identity = accountIdentity;
    // A reset: it ends every session, this one too, so the customer logs in with the new password.
    await call('POST', `${auth}/password/reset`, { ...values, identity });
    document.getElementById('login-form').elements.namedItem('identity').value = identity;
    show('login');
    setStatus(t('status.password_set'), 'success');
  });

  document.getElementById('password-set-resend').addEventListener('click', () => {
    void run(passwordSetForm, async () => {
      passwordSetForm.elements.namedItem('code').value = '';
      await sendPasswordCode();
      document.getElementById('password-set-code').focus();
    });
  });

  onSubmit('profile-form', async (values) => {
    const customer = await call('POST', `${auth}/profile`, values);
    updateAccount(customer);
    setStatus(t('status.name_changed', { name: customer.name }), 'success');
  });

  function identityStep(confirming) {
    identityConfirming = confirming;
    identityChangeForm.hidden = confirming || !hasPassword;
    identityConfirmForm.hidden = !confirming || !hasPassword;
  }

  onSubmit('identity-change-form', async (values, form) => {
    await call('POST', `${auth}/identity/change`, values);
    form.reset();
    // Said next to the code field too: on a phone the status line may be scrolled out of sight.
    document.getElementById('identity-confirm-sent').textContent = t('status.identity_code_sent', {
      identity: ltr(values[mode]),
    });
    identityStep(true);
    document.getElementById('identity-confirm-code').focus();
    setStatus(t('identity.change_sent', { identity: ltr(values[mode]) }), 'success');
  });

  onSubmit(
    'identity-confirm-form',
    async (values, form) => {
      const customer = await call('POST', `${auth}/identity/confirm`, values);
      form.reset();
      identityStep(false);
      updateAccount(customer);
      document.getElementById('identity-change-title').focus();
      setStatus(t('status.identity_changed', { identity: ltr(customer.identity.value) }), 'success');
      await refreshSessions();
    },
    { identity_unavailable: () => t('identity.change_taken') },
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
        setStatus(t('status.export_downloading', { file: ltr(filename) }), 'success');
      },
      { rate_limited: (error) => t('status.export_too_soon', { wait: tryAgain(error) }) },
    );
  });

  function deleteStep(confirming) {
    deleteConfirming = confirming;
    deleteStart.hidden = confirming || !hasPassword;
    deleteForm.hidden = !confirming || !hasPassword;
  }

  deleteStart.addEventListener('click', () => {
    deleteStep(true);
    document.getElementById('delete-password').focus();
  });

  document.getElementById('delete-cancel').addEventListener('click', () => {
    deleteForm.reset();
    clearFieldErrors(deleteForm);
    deleteStep(false);
    setStatus(t('status.kept'), 'success');
    deleteStart.focus();
  });

  onSubmit('delete-form', async (values) => {
    await call('POST', `${auth}/account/delete`, values);
    show('login');
    setStatus(t('identity.deleted'), 'success');
  });

  // ---- Two-step sign-in ---------------------------------------------------------------------

  // Shown where the store offers it (GET account/two-factor answers; 404 where it does not):
  // off → the password, then the QR code and key, then the app's first code turns it on and the
  // ten recovery codes are shown, once; on → new recovery codes or turning it off, each with the
  // password and a code.
  const twoFactorSection = document.getElementById('two-factor-settings');
  const twoFactorPart = (name) => document.getElementById(`two-factor-${name}`);
  const twoFactorSetupForm = twoFactorPart('setup-form');
  const twoFactorConfirmForm = twoFactorPart('confirm-form');
  const twoFactorCodes = twoFactorPart('codes');
  const twoFactorCodesList = twoFactorPart('codes-list');
  const twoFactorNewCodesForm = twoFactorPart('new-codes-form');
  const twoFactorOffForm = twoFactorPart('off-form');
  // The store's last answer: { status, store, recovery_codes_left }.
  let twoFactor = null;
  let recoveryCodes = [];

  /** The section as the customer's two-step sign-in is now: off, pending (set up, not confirmed) or on. */
  function showTwoFactor() {
    const { status, store, recovery_codes_left: left } = twoFactor;
    const required = store === 'required';
    twoFactorPart('state').textContent =
      status === 'on'
        ? typeof left === 'number'
          ? t('two_factor.codes_left', { count: left })
          : t('two_factor.on')
        : t(status === 'pending' ? 'two_factor.pending' : 'two_factor.off');
    twoFactorPart('required').hidden = !required || status !== 'on';
    twoFactorPart('required-setup').hidden = !required || status === 'on';
    twoFactorSetupForm.hidden = status !== 'off';
    twoFactorConfirmForm.hidden = status !== 'pending';
    twoFactorPart('on').hidden = status !== 'on';
    // A store that requires it: no way to turn it off is offered, and the sentence above says why.
    twoFactorPart('off-start').hidden = required;
    if (status !== 'pending') showEnrolment(null);
    twoFactorManage(null);
  }

  const svgNamespace = 'http://www.w3.org/2000/svg';
  // What a QR code is drawn with; anything else (scripts, links, styles, foreign content, event
  // handlers) is left out of the page.
  const svgElements = new Set(['svg', 'g', 'path', 'rect']);
  const svgAttributes = new Set([
    'xmlns',
    'version',
    'viewBox',
    'width',
    'height',
    'preserveAspectRatio',
    'shape-rendering',
    'fill',
    'fill-rule',
    'stroke',
    'stroke-width',
    'stroke-linecap',
    'd',
    'x',
    'y',
    'transform',
  ]);

  /**
   * The store's QR code as a node of this page: parsed as SVG (never as the page's HTML), its root
   * an <svg>, only drawing elements and attributes kept, then imported. Null when it is not one.
   */
  function qrNode(markup) {
    if (typeof markup !== 'string') return null;
    const parsed = new DOMParser().parseFromString(markup, 'image/svg+xml');
    const root = parsed.documentElement;
    if (root.namespaceURI !== svgNamespace || root.localName !== 'svg') return null;
    if (parsed.getElementsByTagNameNS('*', 'parsererror').length > 0) return null;
    for (const element of [root, ...root.querySelectorAll('*')]) {
      if (element.namespaceURI !== svgNamespace || !svgElements.has(element.localName)) {
        element.remove();
        continue;
      }
      for (const attribute of [...element.attributes])
        if (!svgAttributes.has(attribute.name)) element.removeAttribute(attribute.name);
    }
    const node = document.importNode(root, true);
    // The box around it is the image, named in words; the drawing itself is not read out.
    node.setAttribute('aria-hidden', 'true');
    node.setAttribute('focusable', 'false');
    return node;
  }

  /** The QR code and the key of a setup just made, or (null) none: the app already has it. */
  function showEnrolment(setup) {
    const qr = setup === null ? null : qrNode(setup.qr_svg);
    twoFactorPart('qr').replaceChildren(...(qr === null ? [] : [qr]));
    twoFactorPart('qr').hidden = qr === null;
    twoFactorPart('qr-failed').hidden = setup === null || qr !== null;
    twoFactorPart('secret').textContent = setup === null ? '' : setup.secret;
    twoFactorPart('enrol').hidden = setup === null;
  }

  /** The ten recovery codes, shown once; [] puts them away. */
  function showRecoveryCodes(codes) {
    recoveryCodes = codes;
    twoFactorCodesList.replaceChildren(
      ...codes.map((code) => {
        const item = document.createElement('li');
        const text = document.createElement('code');
        text.textContent = code;
        item.append(text);
        return item;
      }),
    );
    twoFactorCodes.hidden = codes.length === 0;
    if (codes.length > 0) twoFactorPart('codes-title').focus();
  }

  /** One of the forms of an account with it on, or (null) neither. */
  function twoFactorManage(form) {
    for (const each of [twoFactorNewCodesForm, twoFactorOffForm]) {
      if (each !== form) {
        each.reset();
        clearFieldErrors(each);
      }
      each.hidden = each !== form;
    }
    if (form !== null) {
      const first = hasPassword ? 'current_password' : 'code';
      form.elements.namedItem(first).focus();
    }
  }

  function resetTwoFactor() {
    twoFactor = null;
    twoFactorSection.hidden = true;
    showEnrolment(null);
    showRecoveryCodes([]);
  }

  async function refreshTwoFactor() {
    twoFactor = await call('GET', `${auth}/account/two-factor`);
    showTwoFactor();
    twoFactorSection.hidden = false;
  }

  function loadTwoFactor() {
    // The store says on <body> whether it offers it (off, optional, required): when off, the section
    // stays hidden without a call. A page that does not say asks, and a 404 hides the section.
    if (document.body.dataset.twoFactor === 'off') return Promise.resolve();
    return loadList(twoFactorSection, refreshTwoFactor, 'two_factor.failed');
  }

  /** The body of a call that asks for the password: without it when the account has none. */
  const withPassword = (values, extra) =>
    hasPassword && values.current_password !== '' ? { current_password: values.current_password, ...extra } : extra;

  // The store may stop offering it while the page is open: the calls then answer 404.
  const twoFactorOff = { not_found: () => t('two_factor.off_by_store', { store: storeName }) };

  onSubmit(
    'two-factor-setup-form',
    async (values, form) => {
      let setup;
      try {
        setup = await call('POST', `${auth}/account/two-factor/setup`, withPassword(values, {}));
      } catch (error) {
        // Turned on meanwhile (on another device): shown as it is.
        if (!(error instanceof ApiError) || error.status !== 409) throw error;
        form.reset();
        await refreshTwoFactor();
        setStatus(t('two_factor.already_on'), 'success');
        return;
      }
      form.reset();
      twoFactor = { ...twoFactor, status: 'pending' };
      showTwoFactor();
      showEnrolment(setup);
      twoFactorPart('confirm-code').focus();
      setStatus(t('two_factor.setup_started'), 'success');
    },
    {
      ...twoFactorOff,
      identity_unverified: () => t('status.passkey_unverified'),
      validation_failed: (error) =>
        error.errors?.current_password ? t('two_factor.wrong_password') : t('errors.validation_failed'),
    },
  );

  onSubmit(
    'two-factor-confirm-form',
    async (values, form) => {
      let codes;
      try {
        ({ recovery_codes: codes } = await call('POST', `${auth}/account/two-factor/confirm`, {
          code: asciiDigits(values.code),
        }));
      } catch (error) {
        // The setup is gone (turned on or off on another device meanwhile): shown as it is now.
        if (!(error instanceof ApiError) || error.status !== 409) throw error;
        form.reset();
        await refreshTwoFactor();
        setStatus(t(twoFactor.status === 'on' ? 'two_factor.already_on' : 'two_factor.setup_gone'), 'error');
        return;
      }
      form.reset();
      twoFactor = { ...twoFactor, status: 'on', recovery_codes_left: codes.length };
      showTwoFactor();
      showRecoveryCodes(codes);
      setStatus(t('two_factor.enabled'), 'success');
    },
    { ...twoFactorOff, validation_failed: () => t('two_factor.wrong_setup_code') },
  );

  // Set up again: a new key (and QR code) for the app, after the password.
  twoFactorPart('restart').addEventListener('click', () => {
    twoFactorConfirmForm.reset();
    clearFieldErrors(twoFactorConfirmForm);
    showEnrolment(null);
    twoFactorConfirmForm.hidden = true;
    twoFactorSetupForm.hidden = false;
    setStatus('');
    if (hasPassword) twoFactorPart('setup-password').focus();
    else twoFactorSetupForm.querySelector('button[type="submit"]').focus();
  });

  twoFactorPart('copy').addEventListener('click', () => {
    const text = recoveryCodes.join('\n');
    // Refused without a secure context or the page's focus: the codes stay on the page to copy by hand.
    const copying = navigator.clipboard?.writeText(text) ?? Promise.reject(new Error('no clipboard'));
    copying.then(
      () => setStatus(t('two_factor.copied'), 'success'),
      () => setStatus(t('two_factor.copy_failed'), 'error'),
    );
  });

  twoFactorPart('download').addEventListener('click', () => {
    const filename = 'recovery-codes.txt';
    const text = `${t('two_factor.file_heading', { store: storeName })}\n\n${recoveryCodes.join('\n')}\n`;
    const url = URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' }));
    const link = document.createElement('a');
    link.href = url;
    link.download = filename;
    link.hidden = true;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    setStatus(t('two_factor.downloading', { file: ltr(filename) }), 'success');
  });

  twoFactorPart('codes-done').addEventListener('click', () => {
    showRecoveryCodes([]);
    setStatus('');
    twoFactorPart('settings-title').focus();
  });

  twoFactorPart('new-codes-start').addEventListener('click', () => {
    setStatus('');
    twoFactorManage(twoFactorNewCodesForm);
  });
  twoFactorPart('off-start').addEventListener('click', () => {
    setStatus('');
    twoFactorManage(twoFactorOffForm);
  });
  for (const button of twoFactorSection.querySelectorAll('[data-two-factor-cancel]')) {
    button.addEventListener('click', () => {
      twoFactorManage(null);
      setStatus('');
      twoFactorPart('settings-title').focus();
    });
  }

  /** A refusal of the password or the code, said for the field that was wrong. */
  const wrongPasswordOrCode = (error) =>
    error.errors?.current_password ? t('two_factor.wrong_password') : t('two_factor.wrong_code_or_recovery');

  onSubmit(
    'two-factor-new-codes-form',
    async (values, form) => {
      const { recovery_codes: codes } = await call(
        'POST',
        `${auth}/account/two-factor/recovery-codes`,
        withPassword(values, { code: asciiDigits(values.code) }),
      );
      form.reset();
      twoFactor = { ...twoFactor, status: 'on', recovery_codes_left: codes.length };
      showTwoFactor();
      showRecoveryCodes(codes);
      setStatus(t('two_factor.codes_made'), 'success');
    },
    { ...twoFactorOff, validation_failed: wrongPasswordOrCode },
  );

  onSubmit(
    'two-factor-off-form',
    async (values, form) => {
      try {
        await call(
          'POST',
          `${auth}/account/two-factor/disable`,
          withPassword(values, { code: asciiDigits(values.code) }),
        );
      } catch (error) {
        // The store requires it (perhaps since the page was opened): shown as it is now.
        if (!(error instanceof ApiError) || error.code !== 'two_factor_enforced') throw error;
        form.reset();
        twoFactor = { ...twoFactor, store: 'required' };
        showTwoFactor();
        setStatus(t('two_factor.required', { store: storeName }), 'error');
        return;
      }
      form.reset();
      twoFactor = { ...twoFactor, status: 'off', recovery_codes_left: 0 };
      showTwoFactor();
      showRecoveryCodes([]);
      twoFactorPart('settings-title').focus();
      setStatus(t('two_factor.disabled'), 'success');
    },
    { ...twoFactorOff, validation_failed: wrongPasswordOrCode },
  );

  return {
    section: accountSection,
    update: updateAccount,
    load: () => Promise.all([loadSessions(), loadTwoFactor()]),
    reset: resetAccount,
    signedOutElsewhere,
    // For the passkey list (passkeys.js), which lives in the account area too.
    timeOf,
    itemButton,
    loadList,
  };
}
