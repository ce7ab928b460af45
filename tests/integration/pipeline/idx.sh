# tests/integration/pipeline/idx.sh: MNIST-style sources in their real
# format, shared by datasets_fashion.sh and pipeline_imported.sh. Sourced
# after tests/lib.sh, never run.

# idx_fixture DIR NTRAIN NTEST: the four idx files, gzip-compressed as the
# sources ship them: labels i mod 10 (train) and (i + 3) mod 10 (test),
# 28x28 grey pixels from the index.
idx_fixture() {
    mkdir -p "$1" && python3 - "$@" <<'PY'
import gzip, struct, sys
d, ntr, nte = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def idx(name, dims, data):
    head = struct.pack('>BBBB', 0, 0, 8, len(dims)) + b''.join(struct.pack('>I', x) for x in dims)
    with open(f'{d}/{name}', 'wb') as f:
        f.write(gzip.compress(head + data, mtime=0))
for s, n, off in (('train', ntr, 0), ('t10k', nte, 3)):
    idx(f'{s}-images-idx3-ubyte.gz', [n, 28, 28], bytes((i * 7 + i // 784) % 256 for i in range(n * 784)))
    idx(f'{s}-labels-idx1-ubyte.gz', [n], bytes((i + off) % 10 for i in range(n)))
PY
}
