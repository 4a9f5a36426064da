# syntax=docker/dockerfile:1
# Animal Store API: the production image. `docker compose up` runs the layout in
# docker-compose.yml; test/cluster/ runs the same layout without Docker.

# Build: compile TypeScript, then keep production dependencies only. No compiler: better-sqlite3
# ships its addon prebuilt (Node-API, one binary for every Node line) in its npm package.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The lockfile names the SDK's workspace; its manifest is enough for the install.
COPY packages/client/package.json ./packages/client/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

# Run: the compiled service as an unprivileged user.
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    APP_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY public ./public
RUN install -d -o node -g node -m 700 /app/data
USER node
EXPOSE 8080
# Liveness only (no dependency is touched); load balancers use /readyz.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node itself is PID 1's child of nothing: SIGTERM reaches the service, which drains and exits.
CMD ["node", "dist/server.js"]
