# karpenter-core operator image: `karpenter serve` with the cloud provider plugins.
#
#   docker build -t karpenter-core .                         # all providers
#   docker build --build-arg PROVIDERS="kwok" -t karpenter-core:kwok .
#
# Stage 1 builds wheels of the core and the selected provider plugins; stage 2 installs
# only those wheels (no compilers, no sources) and runs as a non-root user, matching the
# Helm chart's securityContext (uid/gid 65536, read-only root filesystem).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG PROVIDERS="kwok aws azure gcp"
WORKDIR /src
RUN python -m pip install --no-cache-dir --upgrade pip build
COPY pyproject.toml README.md ./
COPY karpenter_core ./karpenter_core
COPY plugins ./plugins
RUN python -m build --wheel --outdir /wheels . \
    && for p in ${PROVIDERS}; do python -m build --wheel --outdir /wheels "plugins/$p"; done

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /wheels /wheels
RUN python -m pip install /wheels/*.whl && rm -rf /wheels \
    && karpenter --version
USER 65536:65536
# 8080: /metrics, 8081: /healthz and /readyz
EXPOSE 8080 8081
ENTRYPOINT ["karpenter"]
CMD ["serve"]
