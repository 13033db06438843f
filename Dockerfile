# syntax=docker/dockerfile:1
# reassignd images. Two targets:
#   daemon   (default)  `reassignd run`: slim Python 3.11, no Java, no Spark.
#   pipeline            the balance planner (`reassignd plan ...`) on PySpark, with a Java 17 runtime.
# Build:  docker build -t reassignd:0.1.0 .            docker build --target pipeline -t reassignd-pipeline:0.1.0 .
# Reproducible: base images pinned by tag (pin by digest too when you mirror them), every Python package pinned
# by deploy/docker/constraints.txt, packages only from PyPI, no other network fetch, SOURCE_DATE_EPOCH fixed.
# See docs/deployment.md.

ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm
ARG JRE_IMAGE=eclipse-temurin:17.0.13_11-jre-jammy

# --- build: one wheel of reassignd, built offline from the source with pinned build tools ----------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1 SOURCE_DATE_EPOCH=1700000000
WORKDIR /src
COPY deploy/docker/constraints.txt /src/constraints.txt
RUN pip install --no-cache-dir -c constraints.txt setuptools wheel
COPY pyproject.toml README.md /src/
COPY reassignd /src/reassignd
RUN pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /wheels .

# --- daemon-deps: the daemon's dependencies in a venv that the runtime stage copies whole ------------------
FROM ${PYTHON_IMAGE} AS daemon-deps
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
COPY --from=build /src/constraints.txt /tmp/constraints.txt
COPY --from=build /wheels /wheels
RUN python -m venv /opt/reassignd \
 && /opt/reassignd/bin/pip install --no-cache-dir -c /tmp/constraints.txt /wheels/reassignd-*.whl \
 && /opt/reassignd/bin/pip uninstall --yes pip

# --- daemon: the image operators run ---------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS daemon
LABEL org.opencontainers.image.title="reassignd" \
      org.opencontainers.image.description="Executes Kafka partition reassignments safely" \
      org.opencontainers.image.licenses="Apache-2.0"
# A fixed UID/GID so volumes and secret files can be given to it from outside.
RUN groupadd --system --gid 10001 reassignd \
 && useradd --system --uid 10001 --gid reassignd --home-dir /var/lib/reassignd --shell /usr/sbin/nologin reassignd \
 && install -d -o reassignd -g reassignd -m 0750 /var/lib/reassignd \
 && install -d -m 0755 /etc/reassignd
COPY --from=daemon-deps /opt/reassignd /opt/reassignd
ENV PATH=/opt/reassignd/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    REASSIGND_STATE_DIR=/var/lib/reassignd \
    REASSIGND_LOG_FORMAT=json \
    HEALTHCHECK_URL=http://127.0.0.1:8080/healthz
USER reassignd:reassignd
WORKDIR /var/lib/reassignd
VOLUME ["/var/lib/reassignd"]
EXPOSE 8080
# The config is a file mounted read-only at /etc/reassignd/reassignd.toml (it must set api.listen to
# 0.0.0.0:8080 or another non-loopback address to be reachable). Secrets come as files (`*.file` keys or
# REASSIGND_*_FILE variables pointing at /run/secrets/...) or as REASSIGND_* environment variables.
# Slim images have no curl: the health check is Python's urllib. HEALTHCHECK_URL follows another api.listen.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, sys, urllib.request; sys.exit(0 if urllib.request.urlopen(os.environ['HEALTHCHECK_URL'], timeout=4).status == 200 else 1)"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["reassignd"]
CMD ["run", "--config", "/etc/reassignd/reassignd.toml"]

# --- pipeline: the Spark balance planner, Java 17 from the pinned Temurin JRE image --------------------------
FROM ${JRE_IMAGE} AS jre

FROM ${PYTHON_IMAGE} AS pipeline-deps
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
COPY --from=build /src/constraints.txt /tmp/constraints.txt
COPY --from=build /wheels /wheels
RUN python -m venv /opt/reassignd \
 && /opt/reassignd/bin/pip install --no-cache-dir -c /tmp/constraints.txt "$(ls /wheels/reassignd-*.whl)[pipeline]" \
 && /opt/reassignd/bin/pip uninstall --yes pip

FROM ${PYTHON_IMAGE} AS pipeline
RUN groupadd --system --gid 10001 reassignd \
 && useradd --system --uid 10001 --gid reassignd --home-dir /work --shell /usr/sbin/nologin reassignd \
 && install -d -o reassignd -g reassignd -m 0750 /work
COPY --from=jre /opt/java/openjdk /opt/java/openjdk
COPY --from=pipeline-deps /opt/reassignd /opt/reassignd
ENV JAVA_HOME=/opt/java/openjdk \
    PATH=/opt/reassignd/bin:/opt/java/openjdk/bin:$PATH \
    PYSPARK_PYTHON=/opt/reassignd/bin/python \
    SPARK_LOCAL_IP=127.0.0.1 \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER reassignd:reassignd
WORKDIR /work
ENTRYPOINT ["reassignd"]
CMD ["plan", "--help"]
