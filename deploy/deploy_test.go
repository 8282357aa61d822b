// Package deploy holds ctalk's container image, platform notes and the
// scale-out recipe. Its tests check offline the mistakes that would break a
// deploy: a start command that does not start the server, a health path or
// port the server does not serve, a variable the server does not read, a
// shutdown window shorter than a waiting call, an image or a release
// (.goreleaser.yaml) built unlike the binary CI tests, a release image that
// runs unlike the image the platforms build, a tag that go install cannot
// build (install_test.go). They read the platform files
// loosely, for those fields only: the platforms own their schemas, and this
// test does not re-model them.
package deploy

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// longestWait is the longest a tool call may block waiting for something new.
// Platforms must let a stopping replica finish such calls before killing it.
const longestWait = 120

// ---------------------------------------------------------------------------
// Facts read from the rest of the repository.

type repoFacts struct {
	dockerfile  string          // path of the Dockerfile, from the repository root
	image       *dockerImage    // what it builds
	ciBuild     string          // the static build command of .ci/run
	getRoutes   map[string]bool // paths the server answers to GET
	envNames    map[string]bool // environment variables the server reads
	defaultPort int
}

func readRepo(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}

var (
	reRoute   = regexp.MustCompile(`\.(GET|POST|PUT|DELETE|PATCH|Any)\("(/[^"]*)"`)
	reEnvName = regexp.MustCompile(`\(\s*"([A-Z][A-Z0-9_]*)"`)
	rePort    = regexp.MustCompile(`\bPort:\s+(\d+),`)
	reCIBuild = regexp.MustCompile(`(?m)^CGO_ENABLED=0 go build [^\n]*`)
)

// routes returns every method and path registered on an echo router in the
// server's code (files that import echo, outside tests and the harness).
func routes(t *testing.T) [][2]string {
	t.Helper()
	var out [][2]string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != ".." || d.Name() == "ctalk-bench" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(b), `"github.com/labstack/echo/v4"`) {
			return err
		}
		for _, m := range reRoute.FindAllStringSubmatch(string(b), -1) {
			out = append(out, [2]string{m[1], m[2]})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("found no echo routes in the server's code")
	}
	return out
}

func loadRepo(t *testing.T) *repoFacts {
	t.Helper()
	r := &repoFacts{dockerfile: filepath.Join("deploy", "Dockerfile"), getRoutes: map[string]bool{}, envNames: map[string]bool{}}

	img, err := parseDockerfile(readRepo(t, r.dockerfile))
	if err != nil {
		t.Fatalf("%s: %v", r.dockerfile, err)
	}
	r.image = img
	if r.ciBuild = reCIBuild.FindString(readRepo(t, ".ci/run")); r.ciBuild == "" {
		t.Fatal(".ci/run has no line starting \"CGO_ENABLED=0 go build\"; update this test to find CI's static build")
	}
	for _, rt := range routes(t) {
		if rt[0] == "GET" || rt[0] == "Any" {
			r.getRoutes[rt[1]] = true
		}
	}

	// Every variable is read with a call such as str("HOST", ...) or
	// getenv("LOG_LEVEL") in config.go.
	config := readRepo(t, "cmd/ctalk/config.go")
	for _, m := range reEnvName.FindAllStringSubmatch(config, -1) {
		r.envNames[m[1]] = true
	}
	if !r.envNames["DATABASE_URL"] || !r.envNames["PORT"] {
		t.Fatalf("found no environment variable names in cmd/ctalk/config.go (got %v)", sortedKeys(r.envNames))
	}
	m := rePort.FindStringSubmatch(config)
	if m == nil {
		t.Fatal("found no default Port in cmd/ctalk/config.go")
	}
	r.defaultPort, _ = strconv.Atoi(m[1])
	return r
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// problems collects what a check finds.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

func report(t *testing.T, errs problems) {
	t.Helper()
	for _, e := range errs {
		t.Error(e)
	}
}

// checkCommand checks that argv starts the ctalk server as the image holds it:
// "ctalk" alone serves, and so does "ctalk serve".
func checkCommand(p *problems, what string, argv []string, r *repoFacts) {
	if len(argv) == 0 {
		p.add("%s is empty", what)
		return
	}
	if argv[0] != r.image.binary {
		p.add("%s runs %q, but the image puts ctalk at %q", what, argv[0], r.image.binary)
	}
	if len(argv) > 2 || len(argv) == 2 && argv[1] != "serve" {
		p.add("%s %q does not start the server: use %q or %q", what, strings.Join(argv, " "), r.image.binary, r.image.binary+" serve")
	}
}

func checkHealthPath(p *problems, what, path string, r *repoFacts) {
	if !r.getRoutes[path] {
		p.add("%s %q is not a GET route the server registers (%s)", what, path, strings.Join(sortedKeys(r.getRoutes), ", "))
	}
}

func checkEnvName(p *problems, what, name string, r *repoFacts) {
	if !r.envNames[name] {
		p.add("%s: environment variable %q is not one that ctalk reads (%s)", what, name, strings.Join(sortedKeys(r.envNames), ", "))
	}
}

// ---------------------------------------------------------------------------
// The Dockerfile.

// dockerImage is what the Dockerfile says about the image it builds.
type dockerImage struct {
	build      string   // the RUN that builds ./cmd/ctalk
	output     string   // its -o
	binary     string   // where the final stage copies that output
	entrypoint []string // exec form
	cmd        []string // exec form
	user       string
	expose     []string
	env        []string // each ENV as written
	prebuilt   string   // where a release image copies the binary GoReleaser built
}

// rePrebuilt is the source of the COPY of GoReleaser's binary in a release
// image: its context holds each platform's binary at <os>/<arch>/ctalk.
var rePrebuilt = regexp.MustCompile(`^\$\{?TARGETPLATFORM\}?/ctalk$`)

var reOutput = regexp.MustCompile(`\s-o\s+(\S+)`)

// parseDockerfile reads the instructions it needs, joining continued lines.
// Only the final stage's ENTRYPOINT, CMD, USER, EXPOSE and COPY count.
func parseDockerfile(src string) (*dockerImage, error) {
	img := &dockerImage{}
	var copies [][]string
	for _, line := range strings.Split(strings.ReplaceAll(src, "\\\n", " "), "\n") {
		instr, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			copies, img.entrypoint, img.cmd, img.user, img.expose, img.env, img.prebuilt = nil, nil, nil, "", nil, nil, ""
		case "RUN":
			if strings.Contains(rest, "go build") && strings.Contains(rest, "./cmd/ctalk") {
				img.build = rest
				if o := reOutput.FindStringSubmatch(rest); o != nil {
					img.output = o[1]
				}
			}
		case "COPY":
			f := strings.Fields(rest)
			if strings.Contains(rest, "--from=") {
				copies = append(copies, f)
			} else if n := len(f); n >= 2 && rePrebuilt.MatchString(f[n-2]) {
				img.prebuilt = f[n-1]
			}
		case "ENV":
			img.env = append(img.env, rest)
		case "ENTRYPOINT", "CMD":
			var v []string
			if err := json.Unmarshal([]byte(rest), &v); err != nil {
				return nil, fmt.Errorf("%s %s is not in exec (JSON array) form: the image has no shell", instr, rest)
			}
			if strings.EqualFold(instr, "ENTRYPOINT") {
				img.entrypoint = v
			} else {
				img.cmd = v
			}
		case "USER":
			img.user = rest
		case "EXPOSE":
			img.expose = strings.Fields(rest)
		}
	}
	for _, c := range copies {
		if n := len(c); n >= 2 && c[n-2] == img.output && img.output != "" {
			img.binary = c[n-1]
		}
	}
	return img, nil
}

// checkImage returns every way the image disagrees with what CI builds and
// tests, and with what the platforms need.
func checkImage(img *dockerImage, r *repoFacts) problems {
	var p problems
	if img.build == "" {
		p.add("no RUN go build ... ./cmd/ctalk in the Dockerfile")
	}
	// The image must build the binary CI tested: static, and with the same
	// flags that change what is compiled.
	for _, flag := range strings.Fields(r.ciBuild) {
		if flag == "CGO_ENABLED=0" || flag == "-trimpath" || strings.HasPrefix(flag, "-tags") {
			if !strings.Contains(img.build, flag) {
				p.add("the image's go build lacks %q, which CI's static build uses", flag)
			}
		}
	}
	if img.binary == "" {
		p.add("the final stage does not COPY --from=<build stage> %s", img.output)
	}
	checkCommand(&p, "the image's ENTRYPOINT and CMD", append(slices.Clone(img.entrypoint), img.cmd...), r)
	if img.user == "" || img.user == "root" || strings.HasPrefix(img.user, "0") || strings.HasPrefix(img.user, "root:") {
		p.add("the final stage runs as %q; it must name a non-root USER", img.user)
	}
	if !slices.Contains(img.expose, strconv.Itoa(r.defaultPort)) {
		p.add("EXPOSE %v does not include the server's default port %d", img.expose, r.defaultPort)
	}
	return p
}

// checkReleaseImage returns every way the release image, which copies in
// the binary GoReleaser built, would run otherwise than the image the
// platforms build from deploy/Dockerfile (r.image).
func checkReleaseImage(img *dockerImage, r *repoFacts) problems {
	var p problems
	switch {
	case img.prebuilt == "":
		p.add("the release Dockerfile does not COPY ${TARGETPLATFORM}/ctalk, where GoReleaser puts each platform's binary")
	case img.prebuilt != r.image.binary:
		p.add("the release image puts ctalk at %q, but deploy/Dockerfile's at %q", img.prebuilt, r.image.binary)
	}
	same := func(what string, got, want []string) {
		if !slices.Equal(got, want) {
			p.add("the release image's %s is %q, but deploy/Dockerfile's is %q", what, got, want)
		}
	}
	same("ENTRYPOINT", img.entrypoint, r.image.entrypoint)
	same("CMD", img.cmd, r.image.cmd)
	same("USER", []string{img.user}, []string{r.image.user})
	same("EXPOSE", img.expose, r.image.expose)
	same("ENV", img.env, r.image.env)
	return p
}

// ---------------------------------------------------------------------------
// GoReleaser: .goreleaser.yaml (https://goreleaser.com/customization/).

type goreleaserConfig struct {
	Version int `yaml:"version"`
	Builds  []struct {
		Main   string   `yaml:"main"`
		Binary string   `yaml:"binary"`
		Env    []string `yaml:"env"`
		Flags  []string `yaml:"flags"`
		Goos   []string `yaml:"goos"`
		Goarch []string `yaml:"goarch"`
	} `yaml:"builds"`
	Dockers []struct {
		Dockerfile string   `yaml:"dockerfile"`
		Platforms  []string `yaml:"platforms"`
	} `yaml:"dockers_v2"`
}

// releaseDockerfile is the Dockerfile of the release image.
const releaseDockerfile = "deploy/Dockerfile.release"

// checkGoReleaser returns every way a release would build otherwise than
// CI's static build, miss a platform it promises, or build its image from
// a Dockerfile these tests do not check.
func checkGoReleaser(src string, r *repoFacts) problems {
	var p problems
	var c goreleaserConfig
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		p.add("parse .goreleaser.yaml: %v", err)
		return p
	}
	if c.Version != 2 {
		p.add(".goreleaser.yaml has version %d; it is written for GoReleaser's version 2", c.Version)
	}
	if len(c.Builds) != 1 || c.Builds[0].Main != "./cmd/ctalk" || c.Builds[0].Binary != "ctalk" {
		p.add(".goreleaser.yaml must have one build, of ./cmd/ctalk into ctalk")
		return p
	}
	b := c.Builds[0]
	for _, flag := range strings.Fields(r.ciBuild) {
		switch {
		case flag == "CGO_ENABLED=0" && !slices.Contains(b.Env, flag):
			p.add("the release build's env lacks %q, which CI's static build uses", flag)
		case (flag == "-trimpath" || strings.HasPrefix(flag, "-tags")) && !slices.Contains(b.Flags, flag):
			p.add("the release build's flags lack %q, which CI's static build uses", flag)
		}
	}
	built := map[string]bool{}
	for _, goos := range b.Goos {
		for _, arch := range b.Goarch {
			built[goos+"/"+arch] = true
		}
	}
	for _, want := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"} {
		if !built[want] {
			p.add("the release builds no binary for %s", want)
		}
	}
	if len(c.Dockers) == 0 {
		p.add(".goreleaser.yaml builds no image (dockers_v2)")
	}
	for _, d := range c.Dockers {
		if d.Dockerfile != releaseDockerfile {
			p.add("the release image is built from %q; build it from %s, whose checks run here", d.Dockerfile, releaseDockerfile)
		}
		for _, plat := range d.Platforms {
			if !built[plat] || !strings.HasPrefix(plat, "linux/") {
				p.add("the release image's platform %s has no Linux binary in the release build", plat)
			}
		}
		if !slices.Contains(d.Platforms, "linux/amd64") || !slices.Contains(d.Platforms, "linux/arm64") {
			p.add("the release image's platforms %v lack linux/amd64 or linux/arm64", d.Platforms)
		}
	}
	return p
}

// ---------------------------------------------------------------------------
// Railway: railway.json (https://docs.railway.com/config-as-code/reference).

type railwayConfig struct {
	Build struct {
		Builder        string `json:"builder"`
		DockerfilePath string `json:"dockerfilePath"`
	} `json:"build"`
	Deploy struct {
		StartCommand    string `json:"startCommand"`
		HealthcheckPath string `json:"healthcheckPath"`
		// Railway's parser refuses these as strings ("Expected number,
		// received string"); decoding into an int refuses them too.
		DrainingSeconds int `json:"drainingSeconds"`
	} `json:"deploy"`
}

func checkRailway(src string, r *repoFacts) problems {
	var c railwayConfig
	if err := json.Unmarshal([]byte(src), &c); err != nil {
		return problems{"railway.json: " + err.Error()}
	}
	var p problems
	if c.Build.Builder != "DOCKERFILE" || filepath.Clean(c.Build.DockerfilePath) != r.dockerfile {
		p.add("railway.json: build must use the DOCKERFILE builder with dockerfilePath %q", r.dockerfile)
	}
	// Railway runs a Dockerfile service's start command in exec form,
	// replacing the image's ENTRYPOINT: no shell, no variable expansion.
	if strings.ContainsAny(c.Deploy.StartCommand, "$&|;<>`'\"") {
		p.add("railway.json: deploy.startCommand %q needs a shell, but Railway runs it in exec form", c.Deploy.StartCommand)
	}
	checkCommand(&p, "railway.json: deploy.startCommand", strings.Fields(c.Deploy.StartCommand), r)
	checkHealthPath(&p, "railway.json: deploy.healthcheckPath", c.Deploy.HealthcheckPath, r)
	if c.Deploy.DrainingSeconds <= longestWait {
		p.add("railway.json: deploy.drainingSeconds must exceed the longest tool wait (%d s), so that SIGKILL does not cut waiting calls", longestWait)
	}
	return p
}

// ---------------------------------------------------------------------------
// Render: render.yaml, a Blueprint (https://render.com/docs/blueprint-spec).

type renderBlueprint struct {
	Services []struct {
		Name                    string `yaml:"name"`
		Type                    string `yaml:"type"`
		DockerfilePath          string `yaml:"dockerfilePath"`
		DockerCommand           string `yaml:"dockerCommand"`
		HealthCheckPath         string `yaml:"healthCheckPath"`
		MaxShutdownDelaySeconds int    `yaml:"maxShutdownDelaySeconds"`
		EnvVars                 []struct {
			Key           string `yaml:"key"`
			Value         string `yaml:"value"`
			GenerateValue bool   `yaml:"generateValue"`
			FromDatabase  *struct {
				Name     string `yaml:"name"`
				Property string `yaml:"property"`
			} `yaml:"fromDatabase"`
		} `yaml:"envVars"`
	} `yaml:"services"`
	Databases []renderDatabase `yaml:"databases"`
}

type renderDatabase struct {
	Name string `yaml:"name"`
}

func checkRender(src string, r *repoFacts) problems {
	var bp renderBlueprint
	if err := yaml.Unmarshal([]byte(src), &bp); err != nil {
		return problems{"render.yaml: " + err.Error()}
	}
	var p problems
	var web int
	for _, s := range bp.Services {
		if s.Type != "web" {
			continue
		}
		web++
		what := fmt.Sprintf("render.yaml: service %q", s.Name)
		if filepath.Clean(s.DockerfilePath) != r.dockerfile {
			p.add("%s: dockerfilePath %q is not %q", what, s.DockerfilePath, r.dockerfile)
		}
		if s.DockerCommand != "" {
			checkCommand(&p, what+": dockerCommand", strings.Fields(s.DockerCommand), r)
		}
		checkHealthPath(&p, what+": healthCheckPath", s.HealthCheckPath, r)
		if d := s.MaxShutdownDelaySeconds; d <= longestWait || d > 300 {
			p.add("%s: maxShutdownDelaySeconds %d must exceed the longest tool wait (%d s) and be at most Render's 300", what, d, longestWait)
		}
		env := map[string]string{}
		var dbURL, secretGenerated bool
		for _, v := range s.EnvVars {
			checkEnvName(&p, what, v.Key, r)
			env[v.Key] = v.Value
			switch {
			case v.Key == "DATABASE_URL" && v.FromDatabase != nil:
				declared := slices.Contains(bp.Databases, renderDatabase{Name: v.FromDatabase.Name})
				dbURL = declared && v.FromDatabase.Property == "connectionString"
			case v.Key == "SIGNUP_SECRET":
				secretGenerated = v.GenerateValue && v.Value == ""
			}
		}
		if !dbURL {
			p.add("%s: DATABASE_URL must come from a declared database's connectionString, or ctalk runs on a throwaway SQLite file", what)
		}
		if env["ALLOW_ORG_SIGNUP"] == "false" && !secretGenerated {
			p.add("%s: sign-up is closed, so SIGNUP_SECRET must be generated (generateValue: true), never written in the file", what)
		}
	}
	if web != 1 {
		p.add("render.yaml: want exactly one web service, found %d", web)
	}
	return p
}

// ---------------------------------------------------------------------------
// The scale-out recipe: nginx in front of replicas, started by compose.

func checkNginx(conf string) problems {
	conf = regexp.MustCompile(`#[^\n]*`).ReplaceAllString(conf, "")
	var p problems
	for _, d := range []string{"proxy_read_timeout", "proxy_send_timeout", "send_timeout"} {
		m := regexp.MustCompile(`(?m)^\s*` + d + `\s+(\d+)s;`).FindStringSubmatch(conf)
		if m == nil {
			p.add("nginx.conf: %s is not set in seconds", d)
		} else if n, _ := strconv.Atoi(m[1]); n <= longestWait {
			p.add("nginx.conf: %s %ss does not exceed the longest tool wait (%d s)", d, m[1], longestWait)
		}
	}
	mcp := regexp.MustCompile(`(?s)location /mcp \{(.*?)\}`).FindStringSubmatch(conf)
	if mcp == nil {
		p.add("nginx.conf: no location /mcp block")
		return p
	}
	for _, want := range []string{"proxy_buffering off;", "gzip off;"} {
		if !strings.Contains(mcp[1], want) {
			p.add("nginx.conf: location /mcp lacks %q; event streams must not be buffered or compressed", want)
		}
	}
	return p
}

type composeFile struct {
	Services map[string]struct {
		Deploy *struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
		Environment     map[string]string `yaml:"environment"`
		StopGracePeriod string            `yaml:"stop_grace_period"`
	} `yaml:"services"`
}

func checkCompose(src string, r *repoFacts) problems {
	var c composeFile
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		return problems{"compose.yaml: " + err.Error()}
	}
	svc, ok := c.Services["ctalk"]
	if !ok {
		return problems{"compose.yaml: no ctalk service"}
	}
	var p problems
	if svc.Deploy == nil || svc.Deploy.Replicas < 2 {
		p.add("compose.yaml: the ctalk service must run at least two replicas")
	}
	for _, k := range slices.Sorted(maps.Keys(svc.Environment)) {
		checkEnvName(&p, "compose.yaml", k, r)
	}
	if g, err := strconv.Atoi(strings.TrimSuffix(svc.StopGracePeriod, "s")); err != nil || g <= longestWait {
		p.add("compose.yaml: stop_grace_period %q must be seconds (such as 150s) exceeding the longest tool wait (%d s)", svc.StopGracePeriod, longestWait)
	}
	return p
}

// ---------------------------------------------------------------------------
// Tests.

// TestLongestWait keeps longestWait honest: the windows above are only long
// enough while no tool may wait longer than it.
func TestLongestWait(t *testing.T) {
	m := regexp.MustCompile(`(?m)^const MaxWait = (\d+) \* time\.Second`).FindStringSubmatch(readRepo(t, "wait/wait.go"))
	if m == nil {
		t.Fatal("wait/wait.go no longer declares \"const MaxWait = N * time.Second\"; update this test to read the longest wait")
	}
	if n, _ := strconv.Atoi(m[1]); n > longestWait {
		t.Errorf("wait.MaxWait is %d s, longer than longestWait (%d s): raise longestWait and every shutdown window and proxy timeout in the deployment files", n, longestWait)
	}
}

func TestDeployFiles(t *testing.T) {
	r := loadRepo(t)
	t.Run("Dockerfile", func(t *testing.T) { report(t, checkImage(r.image, r)) })
	t.Run("Dockerfile.release", func(t *testing.T) {
		img, err := parseDockerfile(readRepo(t, releaseDockerfile))
		if err != nil {
			t.Fatal(err)
		}
		report(t, checkReleaseImage(img, r))
	})
	t.Run(".goreleaser.yaml", func(t *testing.T) { report(t, checkGoReleaser(readRepo(t, ".goreleaser.yaml"), r)) })
	t.Run("railway.json", func(t *testing.T) { report(t, checkRailway(readRepo(t, "railway.json"), r)) })
	t.Run("render.yaml", func(t *testing.T) { report(t, checkRender(readRepo(t, "render.yaml"), r)) })
	t.Run("nginx.conf", func(t *testing.T) { report(t, checkNginx(readRepo(t, "deploy/nginx.conf"))) })
	t.Run("compose.yaml", func(t *testing.T) { report(t, checkCompose(readRepo(t, "deploy/compose.yaml"), r)) })
}
