# syntax=docker/dockerfile:1
# Paygate: one static binary (manager, apiserver) on a distroless, non-root base. The local
# control plane (`paygate dev`) needs the build tag "dev" and is not in the image.
#   docker build -t paygate:dev .
#   docker buildx build --platform linux/amd64,linux/arm64 -t paygate:dev .

FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
WORKDIR /workspace

# Download the modules first, so that this layer is cached until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download

# The sources. Package config go:embeds config/crd/bases/*.yaml and config/samples/*.yaml,
# so the whole config/ directory is copied too.
COPY cmd/ cmd/
COPY api/ api/
COPY apiserver/ apiserver/
COPY controllers/ controllers/
COPY internal/ internal/
COPY pkg/ pkg/
COPY config/ config/

RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o paygate ./cmd/paygate

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/paygate /paygate
USER 65532:65532
ENTRYPOINT ["/paygate"]
CMD ["manager"]
