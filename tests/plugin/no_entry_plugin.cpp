// A shared library that is not a plugin: no NNVM_PLUGIN entry points.
extern "C" __attribute__((visibility("default"))) int not_an_nnvm_plugin() { return 1; }
