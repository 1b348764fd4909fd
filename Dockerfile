# The image of an app built on Mercato: here the demo app of this repository (examples/demo). docs/deploy.md explains
# it; `mercato init` writes the same shape for an app of your own (templates/app/Dockerfile).
#
#   docker build -t mercato-demo .
#   docker build --build-arg BASE_IMAGE=mercato-node20-bookworm-offline:local -t mercato-demo .   # no registry: scripts/docker/base-image.sh
#   docker run --rm -e DATABASE_URL=… -e ENCRYPTION_KEY=… -e PLATFORM_API_KEY=… -e PLATFORM_API_SECRET=… -p 3000:3000 mercato-demo
#   docker run --rm … mercato-demo worker      # or migrate, check
#
# Stages: build (every dependency; the package's JavaScript and the admin UI), deps (production dependencies only),
# then the runtime image (non-root, NODE_ENV=production, a HEALTHCHECK on /readyz).
ARG BASE_IMAGE=node:20-bookworm-slim
ARG APP_DIR=examples/demo

FROM ${BASE_IMAGE} AS build
LABEL org.mercato.build-stage=build
WORKDIR /repo
COPY package.json package-lock.json ./
COPY packages/mercato/package.json packages/mercato/
COPY packages/admin-ui/package.json packages/admin-ui/
COPY packages/platform-sim/package.json packages/platform-sim/
COPY examples/demo/package.json examples/demo/
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY packages packages
# the bundles in dist/ and the admin UI in dist/admin-ui/ (type declarations are not needed to run)
RUN node packages/mercato/scripts/build.mjs --js --no-pglite-template

FROM ${BASE_IMAGE} AS deps
LABEL org.mercato.build-stage=deps
ARG APP_DIR
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/mercato/package.json packages/mercato/
COPY packages/admin-ui/package.json packages/admin-ui/
COPY packages/platform-sim/package.json packages/platform-sim/
COPY examples/demo/package.json examples/demo/
# npm keeps a package that is both a dev dependency of the repository and an optional peer of mercato (vitest, for
# mercato/testing) under --omit=dev, and links mercato's dev dependencies: neither runs in production, so the copy of
# mercato's manifest used here has no peer or dev dependencies.
RUN node -e "const f='packages/mercato/package.json',fs=require('fs'),p=JSON.parse(fs.readFileSync(f));delete p.peerDependencies;delete p.peerDependenciesMeta;delete p.devDependencies;fs.writeFileSync(f,JSON.stringify(p,null,2))" \
  && npm ci --omit=dev --workspace "$APP_DIR" --ignore-scripts --no-audit --no-fund \
  && npm cache clean --force \
  && mkdir -p "$APP_DIR/node_modules"

FROM ${BASE_IMAGE}
ARG APP_DIR
ENV NODE_ENV=production \
    PORT=3000
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY --from=build /repo/packages/mercato/package.json packages/mercato/
COPY --from=build /repo/packages/mercato/bin packages/mercato/bin
COPY --from=build /repo/packages/mercato/migrations packages/mercato/migrations
COPY --from=build /repo/packages/mercato/dist packages/mercato/dist
COPY ${APP_DIR} ${APP_DIR}
COPY --from=deps /app/${APP_DIR}/node_modules ${APP_DIR}/node_modules
# .mercato/ belongs to the runtime user: the CLI bundles the app into .mercato/build/ at each start
RUN ln -s /app/packages/mercato/bin/mercato.js /usr/local/bin/mercato \
  && mkdir -p "${APP_DIR}/.mercato" && chown node:node "${APP_DIR}/.mercato"
WORKDIR /app/${APP_DIR}
USER node
EXPOSE 3000
# healthy when /readyz answers JSON with `ok: true` (the database answers and its migrations are current; 503 and
# `ok: false` otherwise); `node` instead of curl, which the slim image does not have. A worker serves no HTTP: give its container no health check (docker-compose.yml does so).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.MERCATO_METRICS_PORT||process.env.PORT||3000)+'/readyz').then(r=>r.json()).then(b=>process.exit(b.ok===true?0:1),()=>process.exit(1))"]
ENTRYPOINT ["mercato"]
CMD ["start"]
