package deploy

import (
	"regexp"
	"strings"
	"testing"
)

// TestChecksCatchMistakes breaks the real files one way at a time and
// requires the checks to notice, so that a check that can no longer fail
// does not pass unnoticed.
func TestChecksCatchMistakes(t *testing.T) {
	r := loadRepo(t)
	railway := readRepo(t, "railway.json")
	render := readRepo(t, "render.yaml")
	dockerfile := readRepo(t, r.dockerfile)
	nginx := readRepo(t, "deploy/nginx.conf")
	compose := readRepo(t, "deploy/compose.yaml")
	release := readRepo(t, releaseDockerfile)
	goreleaser := readRepo(t, ".goreleaser.yaml")

	edit := func(t *testing.T, s, pattern, repl string) string {
		t.Helper()
		re := regexp.MustCompile(pattern)
		if !re.MatchString(s) {
			t.Fatalf("the file no longer matches %q; update this test", pattern)
		}
		return re.ReplaceAllString(s, repl)
	}
	image := func(src string) problems {
		img, err := parseDockerfile(src)
		if err != nil {
			return problems{err.Error()}
		}
		rr := *r
		rr.image = img
		return checkImage(img, &rr)
	}
	releaseImage := func(src string) problems {
		img, err := parseDockerfile(src)
		if err != nil {
			return problems{err.Error()}
		}
		return checkReleaseImage(img, r)
	}

	tests := []struct {
		name string
		errs func(t *testing.T) problems
		want string // words the error must contain
	}{
		{"railway: builder", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"DOCKERFILE"`, `"RAILPACK"`), r)
		}, "DOCKERFILE builder"},
		{"railway: start command binary", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"/ctalk serve"`, `"/app/ctalk serve"`), r)
		}, "image puts ctalk"},
		{"railway: start command subcommand", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"/ctalk serve"`, `"/ctalk migrate up"`), r)
		}, "does not start the server"},
		{"railway: start command needs a shell", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"/ctalk serve"`, `"/ctalk serve --port $$PORT"`), r)
		}, "exec form"},
		{"railway: health path not served", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"/health"`, `"/healthz"`), r)
		}, "healthcheckPath"},
		{"railway: draining shorter than a wait", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"drainingSeconds": \d+`, `"drainingSeconds": 30`), r)
		}, "drainingSeconds"},
		{"railway: draining as a string", func(t *testing.T) problems {
			return checkRailway(edit(t, railway, `"drainingSeconds": (\d+)`, `"drainingSeconds": "$1"`), r)
		}, "drainingSeconds"},

		{"render: dockerfile path", func(t *testing.T) problems {
			return checkRender(edit(t, render, `dockerfilePath: ./deploy/Dockerfile`, "dockerfilePath: ./Dockerfile"), r)
		}, "dockerfilePath"},
		{"render: docker command binary", func(t *testing.T) problems {
			return checkRender(edit(t, render, `(?m)^    healthCheckPath:`, "    dockerCommand: ctalk serve\n    healthCheckPath:"), r)
		}, "image puts ctalk"},
		{"render: health path", func(t *testing.T) problems {
			return checkRender(edit(t, render, `healthCheckPath: /health`, "healthCheckPath: /status"), r)
		}, "healthCheckPath"},
		{"render: shutdown delay shorter than a wait", func(t *testing.T) problems {
			return checkRender(edit(t, render, `maxShutdownDelaySeconds: \d+`, "maxShutdownDelaySeconds: 60"), r)
		}, "maxShutdownDelaySeconds"},
		{"render: shutdown delay above Render's limit", func(t *testing.T) problems {
			return checkRender(edit(t, render, `maxShutdownDelaySeconds: \d+`, "maxShutdownDelaySeconds: 301"), r)
		}, "300"},
		{"render: undeclared database", func(t *testing.T) problems {
			return checkRender(edit(t, render, `(?m)^  - name: ctalk-db`, "  - name: other-db"), r)
		}, "DATABASE_URL"},
		{"render: database property", func(t *testing.T) problems {
			return checkRender(edit(t, render, `property: connectionString`, "property: host"), r)
		}, "connectionString"},
		{"render: unknown environment variable", func(t *testing.T) problems {
			return checkRender(edit(t, render, `key: LOG_LEVEL`, "key: LOGLEVEL"), r)
		}, "not one that ctalk reads"},
		{"render: closed sign-up with a written secret", func(t *testing.T) problems {
			return checkRender(edit(t, render, `(key: SIGNUP_SECRET\n\s+)generateValue: true`, "${1}value: hunter2"), r)
		}, "SIGNUP_SECRET"},

		{"image: binary elsewhere", func(t *testing.T) problems {
			return image(edit(t, dockerfile, `ENTRYPOINT \["/ctalk"\]`, `ENTRYPOINT ["/bin/ctalk"]`))
		}, "image puts ctalk"},
		{"image: shell form", func(t *testing.T) problems {
			return image(edit(t, dockerfile, `ENTRYPOINT \["/ctalk"\]`, `ENTRYPOINT /ctalk`))
		}, "exec"},
		{"image: builds another package", func(t *testing.T) problems {
			return image(edit(t, dockerfile, `\./cmd/ctalk`, "./cmd/other"))
		}, "go build"},
		{"image: cgo", func(t *testing.T) problems {
			return image(edit(t, dockerfile, `CGO_ENABLED=0`, "CGO_ENABLED=1"))
		}, "CGO_ENABLED=0"},
		{"image: untrimmed", func(t *testing.T) problems {
			return image(edit(t, dockerfile, ` -trimpath`, ""))
		}, "-trimpath"},
		{"image: root", func(t *testing.T) problems {
			return image(edit(t, dockerfile, `USER nonroot:nonroot`, "USER root"))
		}, "non-root"},
		{"image: port", func(t *testing.T) problems {
			return image(edit(t, dockerfile, `EXPOSE 8080`, "EXPOSE 3000"))
		}, "EXPOSE"},

		{"release image: no prebuilt binary", func(t *testing.T) problems {
			return releaseImage(edit(t, release, `\$\{TARGETPLATFORM\}/ctalk /ctalk`, "ctalk /ctalk"))
		}, "TARGETPLATFORM"},
		{"release image: binary elsewhere", func(t *testing.T) problems {
			return releaseImage(edit(t, release, `\$\{TARGETPLATFORM\}/ctalk /ctalk`, "$${TARGETPLATFORM}/ctalk /bin/ctalk"))
		}, "puts ctalk"},
		{"release image: other command", func(t *testing.T) problems {
			return releaseImage(edit(t, release, `CMD \["serve"\]`, `CMD ["migrate", "up"]`))
		}, "CMD"},
		{"release image: root", func(t *testing.T) problems {
			return releaseImage(edit(t, release, `USER nonroot:nonroot`, "USER root"))
		}, "USER"},
		{"release image: other database path", func(t *testing.T) problems {
			return releaseImage(edit(t, release, `RELAY_DB_PATH=/data/ctalk.db`, "RELAY_DB_PATH=/ctalk.db"))
		}, "ENV"},
		{"goreleaser: cgo", func(t *testing.T) problems {
			return checkGoReleaser(edit(t, goreleaser, `CGO_ENABLED=0`, "CGO_ENABLED=1"), r)
		}, "CGO_ENABLED=0"},
		{"goreleaser: untrimmed", func(t *testing.T) problems {
			return checkGoReleaser(edit(t, goreleaser, `(?m)^      - -trimpath\n`, ""), r)
		}, "-trimpath"},
		{"goreleaser: no arm64", func(t *testing.T) problems {
			return checkGoReleaser(edit(t, goreleaser, `goarch: \[amd64, arm64\]`, "goarch: [amd64]"), r)
		}, "arm64"},
		{"goreleaser: image from the source Dockerfile", func(t *testing.T) problems {
			return checkGoReleaser(edit(t, goreleaser, `dockerfile: deploy/Dockerfile.release`, "dockerfile: deploy/Dockerfile"), r)
		}, "Dockerfile.release"},

		{"nginx: short read timeout", func(t *testing.T) problems {
			return checkNginx(edit(t, nginx, `proxy_read_timeout \d+s;`, "proxy_read_timeout 60s;"))
		}, "proxy_read_timeout"},
		{"nginx: buffering", func(t *testing.T) problems {
			return checkNginx(edit(t, nginx, `proxy_buffering off;`, "proxy_buffering on;"))
		}, "buffered"},
		{"compose: one replica", func(t *testing.T) problems {
			return checkCompose(edit(t, compose, `replicas: 2`, "replicas: 1"), r)
		}, "two replicas"},
		{"compose: short grace period", func(t *testing.T) problems {
			return checkCompose(edit(t, compose, `stop_grace_period: \d+s`, "stop_grace_period: 10s"), r)
		}, "stop_grace_period"},
		{"compose: unknown environment variable", func(t *testing.T) problems {
			return checkCompose(edit(t, compose, `LOG_LEVEL: `, "LOGLEVEL: "), r)
		}, "not one that ctalk reads"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.errs(t)
			for _, e := range errs {
				if strings.Contains(e, tt.want) {
					return
				}
			}
			t.Errorf("no error mentions %q; got %q", tt.want, errs)
		})
	}
}

// ---------------------------------------------------------------------------
