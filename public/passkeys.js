// Passkeys on the sign-in page, where the store offers them (auth.passkeys): the list in the
// account area with "Add a passkey" and "Remove", and signing in with one, from the identity
// field's suggestions (conditional UI) or a button. The browser's side of each ceremony is
// @simplewebauthn/browser (window.SimpleWebAuthnBrowser, served by the service at
// /vendor/simplewebauthn-browser.js); every API call goes through the page's own `call`, so the
// CSRF flow, the store-paused notice and the error sentences are the page's.

/** Wires the passkey controls; returns what the rest of the page needs from them. */
export function passkeysArea(page, account) {
  const { auth, storeName, t, tNodes, ApiError, call, describe, setStatus, run, signedIn } = page;
  const webauthn = window.SimpleWebAuthnBrowser;
  // The store offers passkeys and this browser can use them.
  const on = document.body.dataset.passkeys === 'true' && webauthn !== undefined && webauthn.browserSupportsWebAuthn();

  const section = document.getElementById('passkeys');
  const list = document.getElementById('passkeys-list');
  const path = document.getElementById('passkey-path');

  /** What the browser's side of a ceremony refused, in words (the API's refusals say their own). */
  function ceremonyMessage(error, adding) {
    if (error && error.code === 'ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED') return t('status.passkey_exists');
    if (error && (error.name === 'NotAllowedError' || error.name === 'AbortError'))
      return adding ? t('status.passkey_add_cancelled') : t('status.passkey_login_cancelled');
    return adding ? t('status.passkey_cannot_make') : t('status.passkey_cannot_use');
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
    const added = account.timeOf(passkey.created_at);
    if (passkey.last_used_at === null) details.append(...tNodes('passkeys.added_unused', { added }));
    else details.append(...tNodes('passkeys.added_used', { added, used: account.timeOf(passkey.last_used_at) }));
    item.append(
      title,
      details,
      account.itemButton(t('passkeys.remove'), title.id, () => remove(passkey.id, passkey.name)),
    );
    return item;
  }

  async function refresh() {
    const { passkeys } = await call('GET', `${auth}/passkeys`);
    list.replaceChildren(...passkeys.map(passkeyItem));
    document.getElementById('passkeys-empty').hidden = passkeys.length > 0;
  }

  /** Shows the list on entering the account area. */
  function load() {
    section.hidden = false;
    return account.loadList(section, refresh, 'status.passkeys_failed');
  }

  // The store may stop offering passkeys while the page is open: the calls then answer 404.
  const off = { not_found: () => t('status.passkeys_off', { store: storeName }) };

  const addForm = document.getElementById('passkey-add-form');
  addForm.addEventListener('submit', (event) => {
    event.preventDefault();
    // Asked of an account that has a password, so a session alone cannot add a way in.
    const password = addForm.elements.current_password.value;
    void run(
      section,
      async () => {
        const optionsJSON = await call('POST', `${auth}/passkeys/register/options`);
        let credential;
        try {
          credential = await webauthn.startRegistration({ optionsJSON });
        } catch (error) {
          setStatus(ceremonyMessage(error, true), 'error');
          return;
        }
        const body = password === '' ? { credential } : { credential, current_password: password };
        const passkey = await call('POST', `${auth}/passkeys/register`, body);
        addForm.reset();
        await refresh();
        setStatus(t('status.passkey_added', { name: passkey.name }), 'success');
      },
      {
        ...off,
        identity_unverified: () => t('status.passkey_unverified'),
        validation_failed: (error) =>
          error.errors?.current_password ? t('status.passkey_wrong_password') : t('status.passkey_unchecked'),
      },
    );
  });

  function remove(id, name) {
    void run(section, async () => {
      try {
        await call('POST', `${auth}/passkeys/${encodeURIComponent(id)}/delete`);
        setStatus(t('status.passkey_removed', { name }), 'success');
      } catch (error) {
        if (!(error instanceof ApiError) || error.code !== 'not_found') throw error;
        setStatus(t('status.passkey_already_removed'), 'success');
      }
      await refresh();
      // Its button is gone with it: keep the keyboard in the section.
      document.getElementById('passkeys-title').focus();
    });
  }

  /** Options, the browser's ceremony and the sign-in; `autofill` waits for a pick in the identity field. */
  async function signIn(autofill) {
    const optionsJSON = await call('POST', `${auth}/passkeys/login/options`);
    const credential = await webauthn.startAuthentication({ optionsJSON, useBrowserAutofill: autofill });
    const session = await call('POST', `${auth}/passkeys/login`, { credential });
    document.getElementById('login-form').reset();
    // Signed in, or (should the store ask a second step of passkeys too) on to the code.
    signedIn(session);
  }

  const refused = {
    ...off,
    unauthenticated: () => t('status.passkey_refused'),
  };

  // The identity field offers the device's passkeys for this store as it is focused (conditional
  // UI). At most one such request waits at a time; leaving the log-in form cancels it.
  let autofillWaiting = false;
  async function startAutofill() {
    if (!on || autofillWaiting || !(await webauthn.browserSupportsWebAuthnAutofill())) return;
    autofillWaiting = true;
    try {
      await signIn(true);
    } catch (error) {
      // Cancelled (the form was left, or the button started a ceremony of its own): nothing to say.
      if (error instanceof ApiError && error.code !== 'store_unavailable') setStatus(describe(error, refused), 'error');
    } finally {
      autofillWaiting = false;
    }
  }
  function stopAutofill() {
    if (autofillWaiting) webauthn.WebAuthnAbortService.cancelCeremony();
  }

  document.getElementById('passkey-login').addEventListener('click', () => {
    void run(
      path,
      async () => {
        try {
          await signIn(false);
        } catch (error) {
          if (error instanceof ApiError) throw error;
          setStatus(ceremonyMessage(error, false), 'error');
        }
      },
      refused,
    );
  });

  /** Once the identity fields are set up: let the log-in field offer passkeys, and show the button. */
  function setUp() {
    if (!on) return;
    document.getElementById('login-identity').setAttribute('autocomplete', 'username webauthn');
    path.hidden = false;
  }

  return {
    on,
    load,
    reset: () => list.replaceChildren(),
    setUp,
    startAutofill,
    stopAutofill,
  };
}
