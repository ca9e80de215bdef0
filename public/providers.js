// Sign-in providers on the sign-in page (OpenID Connect: "Continue with Google"): the buttons by
// the log-in and registration forms, the "Sign-in providers" list in the account area with
// "Unlink" and "Link …", and the sentence for the `?error=` the way back may bring. Starting is a
// navigation, not a fetch: the browser goes to the provider and comes back to this page. Every
// API call goes through the page's own `call`, so the CSRF flow, the store-paused notice and the
// error sentences are the page's. Like account.js, nothing is written as HTML.

/** Where a start is remembered across the trip to the provider, to name it when the page comes back. */
const pendingKey = 'storefront-auth:provider-start';
const pendingMs = 10 * 60 * 1000;

/** Wires the provider controls; returns what the rest of the page needs from them. */
export function providersArea(page, account) {
  const { auth, t, tNodes, ApiError, call, setStatus, run, csrfToken } = page;

  const section = document.getElementById('providers');
  const list = document.getElementById('providers-list');
  const addList = document.getElementById('providers-add');
  let storeProviders = null; // [{ id, name }] once the store has said
  let storeLoading = null;

  const nameOf = (id) => storeProviders?.find((provider) => provider.id === id)?.name ?? id;

  /** This page's own path and query, without an `error` it came back with: where the provider returns to. */
  function returnTo() {
    const url = new URL(window.location.href);
    url.searchParams.delete('error');
    return `${url.pathname}${url.search}`;
  }

  /** A link that starts the trip to the provider, remembering which one and what for. */
  function startLink(provider, text, link) {
    const query = new URLSearchParams({ return_to: returnTo() });
    if (link) query.set('link', '1');
    const anchor = document.createElement('a');
    anchor.className = link ? 'button secondary' : 'button provider';
    anchor.href = `${auth}/providers/${encodeURIComponent(provider.id)}/start?${query}`;
    anchor.textContent = text;
    anchor.addEventListener('click', () => {
      // A link start carries the session's CSRF token, read now: signing in again replaced it.
      if (link) {
        const withToken = new URLSearchParams(query);
        withToken.set('xsrf_token', csrfToken() ?? '');
        anchor.href = `${auth}/providers/${encodeURIComponent(provider.id)}/start?${withToken}`;
      }
      const pending = { id: provider.id, name: provider.name, link, at: Date.now() };
      try {
        window.sessionStorage.setItem(pendingKey, JSON.stringify(pending));
      } catch {
        // Storage refused (private mode): the page comes back all the same, just less specific.
      }
    });
    const item = document.createElement('li');
    item.append(anchor);
    return item;
  }

  /** Asks the store for its providers (once it has answered) and shows the buttons when it has any. */
  function loadStore() {
    storeLoading ??= call('GET', `${auth}/providers`)
      .then(({ providers }) => {
        storeProviders = providers;
        for (const block of document.querySelectorAll('.provider-choices')) {
          block
            .querySelector('.provider-buttons')
            .replaceChildren(
              ...providers.map((provider) =>
                startLink(provider, t('providers.continue', { provider: provider.name }), false),
              ),
            );
          block.hidden = providers.length === 0;
        }
      })
      .catch(() => {
        // No buttons: the password form works the same. Asked again when the store opens.
        storeLoading = null;
      });
    return storeLoading;
  }

  let customer = null;

  /** One linked provider as a list item: its name, the email it gave, when, and an Unlink button. */
  function linkItem(link, index) {
    const item = document.createElement('li');
    const title = document.createElement('p');
    title.id = `provider-link-${index}`;
    const name = document.createElement('strong');
    name.textContent = nameOf(link.provider);
    title.append(name);
    const details = document.createElement('p');
    details.className = 'hint';
    const when = account.timeOf(link.linked_at);
    if (link.email === null) details.append(...tNodes('providers.linked', { when }));
    else {
      const email = document.createElement('bdi');
      email.dir = 'ltr';
      email.textContent = link.email;
      details.append(...tNodes('providers.linked_email', { email, when }));
    }
    item.append(
      title,
      details,
      account.itemButton(t('providers.unlink'), title.id, () => unlink(link.provider)),
    );
    return item;
  }

  async function refresh() {
    const { links } = await call('GET', `${auth}/providers/linked`);
    list.replaceChildren(...links.map(linkItem));
    document.getElementById('providers-empty').hidden = links.length > 0;
    // Linking needs a proven address: the start refuses an unproven one.
    const proven = customer !== null && customer.identity.verified_at !== null;
    document.getElementById('providers-unverified').hidden = proven;
    const linked = new Set(links.map((link) => link.provider));
    const others = proven ? storeProviders.filter((provider) => !linked.has(provider.id)) : [];
    addList.replaceChildren(
      ...others.map((provider) => startLink(provider, t('providers.link', { provider: provider.name }), true)),
    );
  }

  /** Shows the section on entering the account area, where the store has providers. */
  async function load(signedIn) {
    customer = signedIn;
    await loadStore();
    if (storeProviders === null || storeProviders.length === 0) return;
    section.hidden = false;
    await account.loadList(section, refresh, 'status.providers_failed');
  }

  function unlink(id) {
    const name = nameOf(id);
    void run(
      section,
      async () => {
        try {
          await call('POST', `${auth}/providers/${encodeURIComponent(id)}/unlink`);
          setStatus(t('status.provider_unlinked', { provider: name }), 'success');
        } catch (error) {
          if (!(error instanceof ApiError) || error.code !== 'not_found') throw error;
          setStatus(t('status.provider_already_unlinked', { provider: name }), 'success');
        }
        await refresh();
        // Its button is gone with it: keep the keyboard in the section.
        document.getElementById('providers-title').focus();
      },
      {
        last_sign_in_method: () => t('status.provider_last_method'),
      },
    );
  }

  // ---- Coming back from the provider ------------------------------------------------------

  /** The start this page made before the trip, if it is recent; forgotten once read. */
  function takePending() {
    try {
      const raw = window.sessionStorage.getItem(pendingKey);
      window.sessionStorage.removeItem(pendingKey);
      const pending = raw === null ? null : JSON.parse(raw);
      return pending !== null && Date.now() - pending.at < pendingMs ? pending : null;
    } catch {
      return null;
    }
  }

  const pending = takePending();
  const url = new URL(window.location.href);
  const error = url.searchParams.get('error');
  if (error !== null) {
    // Said once: a reload or a bookmark of the page does not say it again.
    url.searchParams.delete('error');
    window.history.replaceState(window.history.state, '', `${url.pathname}${url.search}${url.hash}`);
  }

  /** The way back's `?error=` in words, naming the provider when this page started the trip. */
  function errorSentence(code) {
    const provider = pending?.name ?? t('providers.unnamed');
    const linking = pending?.link === true;
    switch (code) {
      case 'provider_refused':
        return t(linking ? 'status.provider_cancelled_link' : 'status.provider_cancelled_sign_in', { provider });
      case 'email_unverified':
        return pending === null
          ? t('identity.provider_unconfirmed_unnamed')
          : t('identity.provider_unconfirmed', { provider });
      case 'store_unavailable':
        return t('status.provider_store_closed');
      case 'account_blocked':
        return t('status.provider_account_blocked');
      case 'identity_unverified':
        return t('identity.providers_unverified');
      case 'provider_in_use':
        return pending === null ? t('status.provider_in_use_unnamed') : t('status.provider_in_use', { provider });
      case 'reauthentication_required':
        return t('status.provider_reauthenticate', { provider });
      case 'unauthenticated':
        return t('status.provider_log_in_first', { provider });
      case 'csrf_token_mismatch':
        return t('status.provider_not_from_here', { provider });
      default: // provider_error, and any code this page does not know yet
        return t(linking ? 'status.provider_link_failed' : 'status.provider_sign_in_failed', { provider });
    }
  }

  /** Once the page knows who is signed in: says how the trip to the provider ended. */
  let settled = false;
  function cameBack(signedIn) {
    if (settled) return;
    settled = true;
    if (error !== null) setStatus(errorSentence(error), 'error');
    // Not signed in without an error: the shopper came back some other way (the Back button).
    else if (pending === null || signedIn === null) return;
    else if (pending.link) setStatus(t('status.provider_linked', { provider: pending.name }), 'success');
    else setStatus(t('status.provider_welcome', { name: signedIn.name, provider: pending.name }), 'success');
  }

  return {
    load,
    loadStore,
    cameBack,
    reset() {
      customer = null;
      list.replaceChildren();
      addList.replaceChildren();
    },
  };
}
