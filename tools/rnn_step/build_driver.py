"""Builds driver.cpp against a built libnnvm, for the scripts beside it."""
import os
import subprocess
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))


def build_driver(build, prefix):
    """The driver's path in a new temporary folder (prefix names it), linked against build/libnnvm.so."""
    work = tempfile.mkdtemp(prefix=prefix)
    driver = os.path.join(work, "driver")
    subprocess.run(["g++", "-std=c++20", "-O2", "-g", f"-I{build}/include", f"-I{root}/python-free-api/include",
                    os.path.join(here, "driver.cpp"), "-o", driver, f"-L{build}", "-lnnvm",
                    f"-Wl,-rpath,{build}"], check=True)
    return work, driver
