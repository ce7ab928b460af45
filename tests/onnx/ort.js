#!/usr/bin/env node
// tests/onnx/ort.js: ONNX Runtime (npm onnxruntime-node, installed by `make deps`
// under build/onnxrt; ORT_DIR names that folder) on the models `catalog export
// --onnx` writes.
//
//   node ort.js run MODEL.onnx RAW...        one JSON line per input: {"input", "outputs": {name: [values]}}
//   node ort.js time MODEL.onnx RAW RUNS WARMUP THREADS
//                                            one line: "median_ms MS runs N threads T"
//
// RAW is a float32 file of the model input (1, c, h, w), little-endian, as the
// engine feeds the network (pixels / 255, channels first); for `time`, RAW
// "pattern" is the input `rtl profile` times (its fill_pattern), so both
// runtimes compute on the same values.
'use strict';
const fs = require('fs');
const path = require('path');

function load_ort() {
    const dir = process.env.ORT_DIR || path.join(__dirname, '..', '..', 'build', 'onnxrt');
    return require(path.join(dir, 'node_modules', 'onnxruntime-node'));
}

function raw_tensor(ort, file, dims) {
    const n = dims.reduce((a, x) => a * x, 1);
    if (file === 'pattern') {
        const f = new Float32Array(n);
        for (let i = 0; i < n; i++) f[i] = Math.floor(Number((BigInt(i) * 2654435761n) & 0xffffffffn) / 2 ** 24) / 256;
        return new ort.Tensor('float32', f, dims);
    }
    const b = fs.readFileSync(file);
    if (b.length !== 4 * n) throw new Error(`${file}: ${b.length} bytes, the model input takes ${4 * n}`);
    const f = new Float32Array(n);
    for (let i = 0; i < n; i++) f[i] = b.readFloatLE(4 * i);
    return new ort.Tensor('float32', f, dims);
}

async function session(ort, model, threads) {
    return ort.InferenceSession.create(model, {
        intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
        graphOptimizationLevel: 'all',
    });
}

function input_dims(s) {
    const meta = s.inputMetadata && s.inputMetadata[0];
    if (meta && meta.shape) return meta.shape;
    throw new Error('the model input has no static shape');
}

async function run(ort, model, raws) {
    const s = await session(ort, model, 1);
    const dims = input_dims(s);
    for (const r of raws) {
        const out = await s.run({[s.inputNames[0]]: raw_tensor(ort, r, dims)});
        const o = {};
        for (const k of s.outputNames) o[k] = Array.from(out[k].data);
        process.stdout.write(JSON.stringify({input: r, outputs: o}) + '\n');
    }
}

async function time(ort, model, raw, runs, warmup, threads) {
    const s = await session(ort, model, threads);
    const feed = {[s.inputNames[0]]: raw_tensor(ort, raw, input_dims(s))};
    for (let i = 0; i < warmup; i++) await s.run(feed);
    const t = [];
    for (let i = 0; i < runs; i++) {
        const t0 = process.hrtime.bigint();
        await s.run(feed);
        t.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    t.sort((a, b) => a - b);
    const m = t.length % 2 ? t[(t.length - 1) / 2] : (t[t.length / 2 - 1] + t[t.length / 2]) / 2;
    process.stdout.write(`median_ms ${m.toFixed(4)} runs ${runs} threads ${threads}\n`);
}

async function main() {
    const [cmd, model, ...rest] = process.argv.slice(2);
    const ort = load_ort();
    if (cmd === 'run' && model && rest.length) return run(ort, model, rest);
    if (cmd === 'time' && model && rest.length === 4)
        return time(ort, model, rest[0], +rest[1], +rest[2], +rest[3]);
    process.stderr.write('usage: ort.js run MODEL RAW... | time MODEL RAW RUNS WARMUP THREADS\n');
    process.exit(2);
}

main().catch((e) => {
    process.stderr.write(`ort.js: error: ${e.message}\n`);
    process.exit(1);
});
