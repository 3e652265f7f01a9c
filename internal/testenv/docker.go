package testenv

// The Docker provider for tests, so that they can run table-driven over the
// engine matrix. Every helper skips the test, saying why, in the quick tier
// (go test -short), when no Docker engine is reachable and when the image is
// missing, and registers cleanup that removes every container even when the
// test fails.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/testdbd/testdbd/instance/docker"
)

var (
	dockerOnce sync.Once
	noEngine   string // why no Docker engine is reachable; empty when one is
)

// DockerAvailable reports whether a Docker engine is reachable; when it is
// not, the reason says why. It disables Ryuk for the
// test process (its image cannot be pulled here) unless the environment
// says otherwise, so call it before any other testcontainers call.
func DockerAvailable() (ok bool, reason string) {
	dockerOnce.Do(func() {
		if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
			_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		}
		if !testing.Verbose() {
			docker.SetLibraryLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cli, err := testcontainers.NewDockerClientWithOpts(ctx)
		if err != nil {
			noEngine = fmt.Sprintf("no Docker engine reachable: %v", err)
			return
		}
		_ = cli.Close()
	})
	return noEngine == "", noEngine
}

// Docker starts a Docker provider of image with its own state directory,
// and closes it at the end of the test, failing the test if any of its
// containers remain. It skips the test in the quick tier, when no Docker
// engine is reachable and when the image is missing (NeedImage).
func Docker(tb testing.TB, image string) *docker.Provider {
	tb.Helper()
	NeedImage(tb, image)
	dir, err := tempDir(kindDocker)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := docker.New(ctx, docker.Config{StateDir: dir, Image: image, TmpfsBytes: 512 << 20,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatalf("docker provider: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			tb.Errorf("close docker provider: %v", err)
		}
		if left := Containers(ctx, p.Owner()); len(left) > 0 {
			tb.Errorf("docker provider left containers: %v", left)
		}
	})
	return p
}

// Containers lists the ids of the containers labelled with owner (a
// Docker provider's Owner), nil when Docker cannot be asked.
func Containers(ctx context.Context, owner string) []string {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil
	}
	defer func() { _ = cli.Close() }()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", docker.LabelOwner+"="+owner)})
	if err != nil {
		return nil
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID[:12])
	}
	return ids
}
