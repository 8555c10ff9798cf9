# A stand-in for tensorflow/tensorflow:2.21.0-gpu where no image registry can be reached, built by
# docker/local_engine.sh on the Debian image it makes with debootstrap: the distribution's Python
# with pip and venv, the CA bundle of the machine that builds it (in the build context as
# ca-certificates.crt; pip, curl and git in the images built on it trust it), and tensorflow
# from the Python package index. It runs on CPUs; the TensorFlow wheel finds a GPU when the
# container is given one and the CUDA libraries (the tensorflow[and-cuda] extra) are there.

ARG DEBIAN_IMAGE=seed_rl/debian:bookworm
FROM ${DEBIAN_IMAGE}

ARG TF_VERSION=2.21.0

ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_BREAK_SYSTEM_PACKAGES=1 \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt \
    CURL_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt \
    GIT_SSL_CAINFO=/etc/ssl/certs/ca-certificates.crt

COPY ca-certificates.crt /usr/local/share/ca-certificates/seed_rl_build_host.crt
# hadolint ignore=DL3008
RUN apt-get update && \
    apt-get install -y --no-install-recommends ca-certificates python3 python3-pip python3-venv && \
    update-ca-certificates && \
    rm -rf /var/lib/apt/lists/* && \
    pip3 install "tensorflow==${TF_VERSION}" && \
    python3 -c 'import tensorflow as tf; print("local base: TensorFlow", tf.__version__)'

CMD ["/bin/bash"]
