# karpenter-core operator image: `karpenter serve` with the cloud provider plugins.
#
#   docker build -t karpenter-core .                         # all providers
#   docker build --build-arg PROVIDERS="kwok" -t karpenter-core:kwok .
#
# Stage 1 builds wheels of the core and the selected provider plugins; stage 2 installs
# only those wheels (no compilers, no sources) and runs as a non-root user, matching the
# Helm chart's securityContext (uid/gid 65536, read-only root filesystem).
#
# Nothing floats: the base image is pinned by the digest of its multi-arch index, and
# every Python package comes from a hash-locked file (pip --require-hashes), the build
# backend from requirements-build.txt, the operator's dependencies from
# requirements-image.txt. `make lock` refreshes both; see docs/serve.md.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b

FROM ${PYTHON_IMAGE} AS build
ARG PROVIDERS="kwok aws azure gcp"
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY requirements-build.txt ./
RUN python -m pip install --require-hashes --only-binary :all: -r requirements-build.txt
COPY pyproject.toml README.md ./
COPY karpenter_core ./karpenter_core
COPY plugins ./plugins
RUN python -m pip wheel --no-deps --no-build-isolation --wheel-dir /wheels . \
    && for p in ${PROVIDERS}; do \
         python -m pip wheel --no-deps --no-build-isolation --wheel-dir /wheels "plugins/$p"; \
       done

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY requirements-image.txt /tmp/
RUN python -m pip install --require-hashes --only-binary :all: -r /tmp/requirements-image.txt \
    && rm /tmp/requirements-image.txt
COPY --from=build /wheels /wheels
# Our own wheels, built above from this source: --no-deps, so nothing else is fetched;
# pip check proves the locked packages satisfy them.
RUN python -m pip install --no-deps /wheels/*.whl && rm -rf /wheels \
    && python -m pip check \
    && karpenter --version
USER 65536:65536
# 8080: /metrics, 8081: /healthz and /readyz
EXPOSE 8080 8081
ENTRYPOINT ["karpenter"]
CMD ["serve"]
