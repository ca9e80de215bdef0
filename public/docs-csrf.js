// Makes "Try it out" on /docs a browser client like any storefront: every POST carries the
// XSRF-TOKEN cookie back in X-XSRF-TOKEN (fetched first when the browser has none), with cookies.
(function () {
  'use strict';
  const cookieName = 'XSRF-TOKEN';
  const unsafeMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

  function readCookie(name) {
    for (const part of document.cookie.split(';')) {
      const [key, ...value] = part.trim().split('=');
      if (key === name) return decodeURIComponent(value.join('='));
    }
    return undefined;
  }

  async function xsrfToken() {
    const token = readCookie(cookieName);
    if (token !== undefined) return token;
    await fetch('/api/v1/csrf-cookie', { credentials: 'same-origin' });
    return readCookie(cookieName);
  }

  window.storefrontAuthDocs = {
    async requestInterceptor(request) {
      // Same origin only: the session cookie must never go to a server the document might name.
      request.credentials = 'same-origin';
      if (unsafeMethods.has(String(request.method).toUpperCase())) {
        const token = await xsrfToken();
        if (token !== undefined) request.headers['X-XSRF-TOKEN'] = token;
      }
      return request;
    },
    responseInterceptor(response) {
      // A refused token (a new key, or a session that ended) is dropped, so the next try fetches a fresh one.
      if (response.status === 419) document.cookie = `${cookieName}=; Max-Age=0; Path=/`;
      return response;
    },
  };
})();
