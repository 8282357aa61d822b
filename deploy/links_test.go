package deploy

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsLinks fails when a relative link of the README, CONTRIBUTING,
// BENCHMARKS or a page of docs/ or deploy/ points at a file that does not
// exist or at a heading its target does not have: pages move between the
// README and docs/, and a link left behind is a dead end for a reader.
func TestDocsLinks(t *testing.T) {
	pages := []string{"README.md", "CONTRIBUTING.md", "BENCHMARKS.md", "deploy/README.md"}
	docs, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("found no docs/*.md (%v)", err)
	}
	for _, d := range docs {
		pages = append(pages, "docs/"+filepath.Base(d))
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	for _, page := range pages {
		for _, m := range link.FindAllStringSubmatch(outsideCode(readRepo(t, page)), -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			file = path.Clean(path.Join(path.Dir(page), file))
			if _, err := os.Stat(filepath.Join("..", file)); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
				continue
			}
			if anchor == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			if anchors[file] == nil {
				anchors[file] = headingAnchors(readRepo(t, file))
			}
			if !anchors[file][anchor] {
				t.Errorf("%s links to %s, but %s has no heading with that anchor", page, target, file)
			}
		}
	}
}

// outsideCode returns the Markdown text md without its fenced code blocks.
func outsideCode(md string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.SplitAfter(md, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line)
		}
	}
	return b.String()
}

// headingAnchors returns the anchors GitHub gives the headings of md:
// lower case, punctuation but hyphens and underscores dropped, spaces as
// hyphens.
func headingAnchors(md string) map[string]bool {
	drop := regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
	out := map[string]bool{}
	for _, line := range strings.Split(outsideCode(md), "\n") {
		if !regexp.MustCompile(`^#{1,6} `).MatchString(line) {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		out[strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-")] = true
	}
	return out
}
