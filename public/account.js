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

  return {
    section: accountSection,
    update: updateAccount,
    load: loadSessions,
    reset: resetAccount,
    signedOutElsewhere,
    // For the passkey list (passkeys.js), which lives in the account area too.
    timeOf,
    itemButton,
    loadList,
  };
}
