package web

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// The embedded static files are addressed with a hash of their content
// (asset "ctalk.css" is /static/ctalk.css?v=<hash>), so that a browser may
// keep them for a year without asking again: a new release changes the
// address of what changed. An address without the current hash (an old
// page, the service worker's fixed one) is served with no-cache.

// staticFiles are the embedded static files.
var staticFiles, _ = fs.Sub(staticFS, "static")

// assetHashes are the hashes of the static files by name.
var assetHashes = hashAssets(staticFiles)

func hashAssets(static fs.FS) map[string]string {
	out := map[string]string{}
	_ = fs.WalkDir(static, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[name] = hex.EncodeToString(sum[:6])
		return nil
	})
	return out
}

// asset is the address of the static file name, with its hash.
func asset(name string) string {
	return "/static/" + name + "?v=" + assetHashes[name]
}

// compress gzips what a handler answers, over a kilobyte, for a browser
// that accepts it: the static files and the overview's charts, which hold
// no secret. The pages are not compressed: each holds the CSRF token beside
// text the request chose (?next=, a search), which compression would let
// an onlooker guess by the sizes of the answers (BREACH).
var compress = middleware.GzipWithConfig(middleware.GzipConfig{MinLength: 1024})

// serveStatic serves the static files: only files, so that a folder
// ("/static/") lists nothing, and a name no file can have (one that is not
// UTF-8, say) is "not found", where http.FS would make it a 500. A file
// asked for with its current hash may be kept for a year, unchanged.
func serveStatic() echo.HandlerFunc {
	static := staticFiles
	files := http.StripPrefix("/static/", http.FileServer(http.FS(static)))
	return func(c echo.Context) error {
		name := strings.TrimPrefix(c.Request().URL.Path, "/static/")
		if st, err := fs.Stat(static, name); err != nil || st.IsDir() {
			return echo.ErrNotFound
		}
		cache := "no-cache"
		if v := c.QueryParam("v"); v != "" && v == assetHashes[name] {
			cache = "public, max-age=31536000, immutable"
		}
		c.Response().Header().Set("Cache-Control", cache)
		files.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}
