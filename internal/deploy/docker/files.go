package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/llmserve/terraform-provider-llmserve/internal/deploy"
)

var _ deploy.RecordKeeper = (*Backend)(nil)

// recordFile holds the launch record amended by in-place changes. Docker cannot change a
// container's labels after create, so the current record lives in the container's own
// filesystem, next to nothing the engine reads.
const recordFile = "/.llmserve/record.json"

// maxRecordBytes bounds what ReadRecord reads: a record is a few KiB.
const maxRecordBytes = 1 << 20

// writeFiles copies files into a container, creating their directories. It works on a
// created, running or stopped container.
func (b *Backend) writeFiles(ctx context.Context, id string, files []deploy.File) error {
	archive, err := Archive(files)
	if err != nil {
		return err
	}
	if err := bounded(ctx, UploadTime(archive.Len()), func(ctx context.Context) error {
		return b.cli.CopyToContainer(ctx, id, "/", archive, container.CopyToContainerOptions{})
	}); err != nil {
		return b.wrap(err, "writing files into container %s", shortID(id))
	}
	return nil
}

// UploadTime is what a call that sends n bytes to the engine adds to its bound: a second
// per MiB, a link of 1 MiB/s (a runner's seed journal, the runner image's build context).
func UploadTime(n int) time.Duration { return time.Duration(n>>20) * time.Second }

// Archive is files as the tar stream the engine's copy API takes at "/", with every parent
// directory; what the server container and the benchmark's runner are given both travel so.
func Archive(files []deploy.File) (*bytes.Buffer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	dirs := map[string]bool{}
	for _, f := range files {
		if !path.IsAbs(f.Path) {
			return nil, fmt.Errorf("file path %q inside the container must be absolute", f.Path)
		}
		rel := strings.TrimPrefix(path.Clean(f.Path), "/")
		for d := path.Dir(rel); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: now}); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: f.Mode, Size: int64(len(f.Content)), ModTime: now}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}

// WriteRecord implements deploy.RecordKeeper.
func (b *Backend) WriteRecord(ctx context.Context, id string, rec deploy.LaunchRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding launch record: %w", err)
	}
	return b.writeFiles(ctx, id, []deploy.File{{Path: recordFile, Content: data, Mode: 0o644}})
}

// ReadRecord implements deploy.RecordKeeper.
func (b *Backend) ReadRecord(ctx context.Context, id string) (deploy.LaunchRecord, bool, error) {
	var data []byte
	err := bounded(ctx, 0, func(ctx context.Context) error {
		rc, _, err := b.cli.CopyFromContainer(ctx, id, recordFile)
		if err != nil {
			return err
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		if _, err := tr.Next(); err != nil {
			return err
		}
		data, err = io.ReadAll(io.LimitReader(tr, maxRecordBytes+1))
		return err
	})
	if cerrdefs.IsNotFound(err) {
		return deploy.LaunchRecord{}, false, nil
	}
	if err != nil {
		return deploy.LaunchRecord{}, false, b.wrap(err, "reading the launch record of container %s", shortID(id))
	}
	if len(data) > maxRecordBytes {
		return deploy.LaunchRecord{}, false, fmt.Errorf("the launch record %s in container %s is larger than %d bytes; it was not written by this provider", recordFile, shortID(id), maxRecordBytes)
	}
	rec, err := deploy.ParseLaunchRecord(string(data))
	if err != nil {
		return deploy.LaunchRecord{}, false, err
	}
	return rec, true, nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
