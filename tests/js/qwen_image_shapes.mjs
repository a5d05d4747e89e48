// transformers.js (npm @huggingface/transformers@4.3.2) as an independent oracle for the Qwen-VL
// image processor's SHAPES and PATCH ORDER (not pixel values: it resizes without antialiasing,
// and not smart_resize rounding: it rounds half-up and pre-enlarges small sides).
//
// usage: node qwen_image_shapes.mjs JOB.json
//   JOB = {"models_dir": DIR, "cases": [{"model": NAME, "raw": FILE, "width": W, "height": H,
//          "out": FILE?}, ...]}
//   DIR/NAME/preprocessor_config.json must exist; FILE holds W·H·3 bytes of interleaved RGB.
// Prints one JSON line per case: {"index","grid":[t,h,w],"rows","cols","resized":[h,w]} or
// {"index","error"}; with "out" also writes pixel_values as raw little-endian float32.
// Runs fully offline (allowRemoteModels = false).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modulePath = process.env.STOKER_TRANSFORMERS_JS ??
  path.join(here, '../../tools/oracles/node_modules/@huggingface/transformers/dist/transformers.node.mjs');
const { env, AutoImageProcessor, RawImage } = await import(modulePath);

const job = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = job.models_dir.endsWith('/') ? job.models_dir : job.models_dir + '/';
env.useBrowserCache = false;
env.useFSCache = false;

const processors = new Map();
async function processorFor(name) {
  if (!processors.has(name)) processors.set(name, await AutoImageProcessor.from_pretrained(name));
  return processors.get(name);
}

for (let index = 0; index < job.cases.length; ++index) {
  const c = job.cases[index];
  try {
    const bytes = fs.readFileSync(c.raw);
    if (bytes.length !== c.width * c.height * 3) throw new Error(`raw size ${bytes.length}`);
    const image = new RawImage(new Uint8ClampedArray(bytes.buffer, bytes.byteOffset, bytes.length),
                               c.width, c.height, 3);
    const proc = await processorFor(c.model);
    // One image per call: the JS processor duplicates the frame only when dims[0] === 1.
    const out = await proc(image);
    const pv = out.pixel_values;
    const grid = Array.from(out.image_grid_thw.data, Number);
    if (c.out) {
      const data = pv.data instanceof Float32Array ? pv.data : Float32Array.from(pv.data);
      fs.writeFileSync(c.out, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    }
    console.log(JSON.stringify({ index, grid, rows: pv.dims[0], cols: pv.dims[1],
                                 resized: out.reshaped_input_sizes[0] }));
  } catch (e) {
    console.log(JSON.stringify({ index, error: String(e && e.message || e) }));
  }
}
