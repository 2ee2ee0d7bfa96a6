package files

import (
	"time"

	"github.com/agritrade/api/platform/filestore"
	"github.com/agritrade/api/platform/logging"
	"github.com/agritrade/api/platform/module"
	"github.com/gin-gonic/gin"
	"github.com/uptrace/bun"
)

// DocumentTypes are the document kinds an upload may name (its "type"
// field; the seed's list, the enum of openapi.yaml's upload bodies). The
// module hands them to the file store at wiring (filestore.AcceptTypes).
var DocumentTypes = []string{"sample", "avatar", "weighbridge", "contract", "image", "logo", "misc", "vehicle",
	"terms-conditions", "trade-contract", "rt-certificate"}

// Deps are what the files feature is built of.
type Deps struct {
	DB    *bun.DB
	Files *filestore.Service
	// Log is the module's: the file routes log as its "files" component,
	// the tus uploads as "uploads".
	Log *logging.Module
	// BaseURL makes the tus Location headers absolute; ResumableTTL is how
	// long an unfinished resumable upload is kept.
	BaseURL      string
	ResumableTTL time.Duration
}

// Feature is the file routes: uploads (form and tus), downloads, archive,
// info. Resumable is the tus uploads' state, swept by the module's runner.
type Feature struct {
	*Resumable
	files   *Handler
	uploads *Uploads
}

// New builds the feature, refusing missing dependencies.
func New(d Deps) (*Feature, error) {
	if err := module.CheckDeps("files", "DB", d.DB, "Files", d.Files, "Log", d.Log); err != nil {
		return nil, err
	}
	up := NewResumable(d.DB, d.Files, d.ResumableTTL, d.Log.Component("uploads"))
	return &Feature{Resumable: up, files: newHandler(d.Files, d.Log.Component("files")), uploads: newUploads(up, d.BaseURL)}, nil
}

// Mount binds the file and upload routes under the module's group.
func (f *Feature) Mount(g gin.IRouter) {
	f.files.mount(g)
	f.uploads.mount(g)
}
