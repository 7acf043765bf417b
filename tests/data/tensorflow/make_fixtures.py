"""Writes the TensorFlow fixtures of tests/api/tensorflow_test.cpp.

Each model is frozen (its variables made Const nodes) into DIR/model.pb, a
GraphDef, with its inputs and TensorFlow's outputs beside it as ONNX
TensorProto files (DIR/input_0.pb, DIR/output_0.pb, ...), the layout
`nnvm run` reads and writes. Weights and inputs are random with a fixed seed.

    pip install tensorflow-cpu==2.21.0 onnx
    python tests/data/tensorflow/make_fixtures.py
"""
import os
import shutil

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def write(name, fn, specs, inputs):
    """Freezes fn (a tf.function of tensors named by specs) and runs the frozen graph."""
    frozen = convert_variables_to_constants_v2(fn.get_concrete_function(*specs))
    outputs = frozen(*[tf.constant(x) for x in inputs])
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    out_dir = os.path.join(HERE, name)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    with open(os.path.join(out_dir, "model.pb"), "wb") as f:
        f.write(frozen.graph.as_graph_def().SerializeToString(deterministic=True))
    for i, x in enumerate(inputs):
        save(x, os.path.join(out_dir, "input_%d.pb" % i), specs[i].name)
    for i, y in enumerate(outputs):
        save(y.numpy(), os.path.join(out_dir, "output_%d.pb" % i), "output_%d" % i)


def save(array, path, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.asarray(array), name).SerializeToString())


def keras_model(name, model, shape, batch):
    fn = tf.function(lambda x: model(x, training=False))
    spec = tf.TensorSpec([None] + list(shape), tf.float32, name="x")
    write(name, fn, [spec], [randn(batch, *shape)])


def mlp():
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(4, activation="softmax")])
    keras_model("mlp", model, (8,), 3)


def cnn():
    model = keras.Sequential([
        keras.Input((12, 12, 3)),
        keras.layers.Conv2D(4, 3, padding="same", activation="relu"),
        keras.layers.BatchNormalization(),
        keras.layers.MaxPooling2D(2),
        keras.layers.DepthwiseConv2D(3, padding="same", depth_multiplier=2),
        keras.layers.AveragePooling2D(3, strides=2, padding="same"),  # 6 -> 3, one padded cell at the end
        keras.layers.Conv2D(6, 2, strides=2, padding="valid", activation="tanh"),
        keras.layers.Flatten(),
        keras.layers.Dense(5, activation="softmax"),
    ])
    bn = model.layers[1]
    gamma, beta, mean, var = bn.get_weights()
    bn.set_weights([1 + 0.1 * randn(*gamma.shape), 0.1 * randn(*beta.shape), randn(*mean.shape),
                    np.abs(randn(*var.shape)) + 0.5])
    keras_model("cnn", model, (12, 12, 3), 2)


def ops():
    """TensorFlow ops Keras 3 layers do not emit, written with tf.nn and tf.raw_ops."""
    w = {
        "conv": tf.Variable(randn(3, 3, 3, 4)), "bias": tf.Variable(randn(4)),
        "scale": tf.Variable(1 + 0.1 * randn(4)), "offset": tf.Variable(randn(4)),
        "mean": tf.Variable(randn(4)), "var": tf.Variable(np.abs(randn(4)) + 0.5),
        "dw": tf.Variable(randn(2, 2, 4, 1)), "fc": tf.Variable(randn(5, 16)),
        "dilated": tf.Variable(randn(2, 2, 4, 3)),
    }

    @tf.function
    def fn(x, y):
        # a strided SAME convolution; below, a depthwise one with EXPLICIT padding
        h = tf.nn.conv2d(x, w["conv"], strides=[1, 2, 2, 1], padding="SAME")
        h = tf.nn.bias_add(h, w["bias"])
        h, _, _, _, _, _ = tf.raw_ops.FusedBatchNormV3(
            x=h, scale=w["scale"], offset=w["offset"], mean=w["mean"], variance=w["var"],
            epsilon=1e-3, is_training=False)
        h = tf.nn.relu6(h)
        # an even kernel dilated by 3 spans 4 cells: SAME pads 1 before, 2 after
        dilated = tf.nn.conv2d(h, w["dilated"], strides=1, padding="SAME", dilations=3)
        h = tf.nn.depthwise_conv2d(h, w["dw"], strides=[1, 1, 1, 1], padding=[[0, 0], [1, 0], [0, 1], [0, 0]])
        h = tf.nn.avg_pool2d(h, ksize=3, strides=2, padding="SAME")
        h = tf.nn.max_pool2d(tf.pad(h, [[0, 0], [1, 1], [0, 0], [0, 0]]), ksize=2, strides=1, padding="SAME")
        pooled = tf.reduce_mean(h, axis=[1, 2], keepdims=True)                 # [n,1,1,4]
        flat = tf.squeeze(pooled, axis=[1, 2])                                   # [n,4]
        z = tf.concat([flat, tf.sigmoid(y[:, :12:1])], axis=1)                   # [n,16]
        logits = tf.matmul(z, w["fc"], transpose_b=True)                         # [n,5]
        t = tf.transpose(h, [0, 3, 1, 2])                                        # NCHW
        t = tf.nn.bias_add(t, w["offset"], data_format="NCHW")
        last = t[..., -1, tf.newaxis, ::-1]                                      # ellipsis, shrink, new axis, reverse
        scaled = tf.tanh(logits) / (tf.reduce_max(y, axis=1, keepdims=True) + 2.0) - 0.5
        pairs = tf.reshape(y, [-1, 2, 7])                                        # BatchMatMulV2, adj_y then adj_x
        gram = tf.matmul(pairs, pairs, transpose_b=True) + tf.reduce_sum(tf.matmul(pairs, pairs, transpose_a=True))
        return (tf.nn.softmax(logits), scaled, tf.expand_dims(last, 0) * tf.reduce_sum(flat),
                tf.nn.leaky_relu(dilated, 0.1), gram)

    specs = [tf.TensorSpec([None, 9, 9, 3], tf.float32, name="x"), tf.TensorSpec([None, 14], tf.float32, name="y")]
    write("ops", fn, specs, [randn(2, 9, 9, 3), randn(2, 14)])


def tensor_ops():
    """The shape, index and elementwise ops that frozen graphs of other models hold."""
    @tf.function
    def fn(x):
        a = tf.slice(x, [0, 1], [-1, 4])                                          # [n,4]
        g = tf.gather(x, [5, 0, 2], axis=1)                                       # [n,3]
        am = tf.cast(tf.argmax(x, axis=1), tf.float32) + tf.cast(tf.argmin(x, axis=1, output_type=tf.int32), tf.float32)
        filled = tf.fill(tf.shape(a), 0.5) + tf.cast(tf.size(x), tf.float32)
        tiled = tf.tile(g, [1, 2])                                                # [n,6]
        mirrored = tf.pad(a, [[0, 0], [2, 1]], mode="REFLECT")                    # [n,7]
        chosen = tf.where(x > 0.0, tf.square(x), tf.math.squared_difference(x, 1.0))
        bounded = tf.maximum(tf.minimum(x, 1.0), -1.0) + tf.math.rsqrt(tf.exp(x)) + tf.math.log(tf.abs(x) + 1.0)
        acts = tf.add_n([tf.nn.elu(x), tf.nn.selu(x), tf.nn.softplus(x), tf.nn.log_softmax(x)])
        reduced = tf.reduce_prod(a, axis=1) + tf.reduce_min(x, axis=[0, 1])
        return (a + filled, tf.concat([tiled, mirrored], axis=-1), chosen * bounded + acts, am + reduced)

    write("tensor_ops", fn, [tf.TensorSpec([None, 6], tf.float32, name="x")], [randn(3, 6)])


def unsupported():
    fn = tf.function(lambda x: tf.math.lgamma(x) + 1.0)
    write("unsupported", fn, [tf.TensorSpec([4], tf.float32, name="x")], [np.abs(randn(4)) + 1])


if __name__ == "__main__":
    keras.utils.set_random_seed(0)
    mlp()
    cnn()
    ops()
    tensor_ops()
    unsupported()
