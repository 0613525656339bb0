# The server as a container image, for Docker Desktop and other hosts
# where a container is easier to run than a build: docs/INSTALL.md "As a
# container image".
#
#   docker build -t mcp-sandboxd .
#   docker run -i --rm -v /var/run/docker.sock:/var/run/docker.sock mcp-sandboxd
#
# The bases are arguments so that scripts/build-server-image can build
# from local bases made from Debian packages (no registry is reachable
# there); each stage installs its packages only when its base lacks them.
ARG BUILD_BASE=debian:bookworm-slim
ARG RUNTIME_BASE=debian:bookworm-slim

FROM ${BUILD_BASE} AS build
# Names the stage's untagged images, for scripts/build-server-image to
# remove those of earlier builds.
LABEL mcp-sandboxd.stage=build
# musl-tools: the agent inside every sandbox is a static musl program
# embedded in the server; python3 embeds it and the scripts (meson.build).
ARG BUILD_PACKAGES="build-essential meson ninja-build pkg-config python3 musl-tools libevent-dev libjson-c-dev libcurl4-openssl-dev libarchive-dev"
RUN if ! dpkg-query -W $BUILD_PACKAGES >/dev/null 2>&1; then \
		apt-get update && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $BUILD_PACKAGES && \
		apt-get clean && rm -rf /var/lib/apt/lists/*; \
	fi
WORKDIR /src
COPY . .
# Release, at -O2 as Debian builds it: -O3 makes GCC 12 warn of format
# truncations it cannot rule out, which -Werror turns into errors.
RUN meson setup /build --prefix=/usr --buildtype=release -Doptimization=2 \
		-Dtests=false -Dfixtures=false && \
	meson compile -C /build && \
	DESTDIR=/staging meson install -C /build --no-rebuild --quiet

FROM ${RUNTIME_BASE}
# The libraries the binary links (ldd); no CA bundle: an engine over TLS
# (--engine tcp://...?tls=DIR) is checked against its own ca.pem, and
# images are pulled by the engine, not by the server.
ARG RUNTIME_PACKAGES="libevent-core-2.1-7 libevent-extra-2.1-7 libjson-c5 libcurl4 libarchive13"
RUN if ! dpkg-query -W $RUNTIME_PACKAGES >/dev/null 2>&1; then \
		apt-get update && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $RUNTIME_PACKAGES && \
		apt-get clean && rm -rf /var/lib/apt/lists/*; \
	fi
COPY --from=build /staging/usr/bin/mcp-sandboxd /usr/bin/mcp-sandboxd
COPY --from=build /staging/usr/share/man/man1/mcp-sandboxd.1 /usr/share/man/man1/mcp-sandboxd.1
# The runtime directory (spools, the agent and each sandbox's channel,
# which sandboxes bind: the server finds where this volume lies on the
# engine's host from its own container) and the state directory
# (snapshots).  Both private (0700), as the server checks; a new
# anonymous volume takes the directory's mode.
RUN mkdir -m 0700 -p /run/mcp-sandboxd /var/lib/mcp-sandboxd
VOLUME /run/mcp-sandboxd
VOLUME /var/lib/mcp-sandboxd
ENV MCP_SANDBOXD_RUNTIME_DIR=/run/mcp-sandboxd \
	MCP_SANDBOXD_STATE_DIR=/var/lib/mcp-sandboxd
# Root: the server talks to the engine through its socket, mounted at
# /var/run/docker.sock.  It runs as PID 1 (it reaps its own workers), so
# no --init is needed.
ENTRYPOINT ["/usr/bin/mcp-sandboxd"]
