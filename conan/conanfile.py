# Conan recipe for consumers who use Conan. It declares the same dependencies that
# scripts/install-deps.sh takes from Debian 12 (versions as close as Conan Center has).
from conan import ConanFile
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout


class MinnowConan(ConanFile):
    name = "minnow"
    version = "0.1.0"
    license = "Apache-2.0"
    description = "Small, fast CPU inference engine with its own model compression toolchain"
    settings = "os", "arch", "compiler", "build_type"
    options = {"with_onnx": [True, False], "with_tests": [True, False]}
    default_options = {"with_onnx": True, "with_tests": False}
    exports_sources = "../CMakeLists.txt", "../cmake/*", "../schema/*", "../core/*", "../backends/*", \
                      "../plugins/*", "../apps/*", "../tests/*"

    def requirements(self):
        self.requires("boost/1.74.0")          # Boost.DLL (header-only) + filesystem
        self.requires("flatbuffers/2.0.8")
        self.requires("spdlog/1.10.0")
        self.requires("onetbb/2021.8.0")
        self.requires("highway/1.0.3")
        self.requires("cli11/2.1.2")
        self.requires("nlohmann_json/3.11.2")
        self.requires("eigen/3.4.0")
        if self.options.with_onnx:
            self.requires("onnx/1.13.1")
            self.requires("protobuf/3.21.12")
        if self.options.with_tests:
            self.requires("doctest/2.4.9")

    def build_requirements(self):
        self.tool_requires("flatbuffers/2.0.8")  # flatc at build time

    def layout(self):
        cmake_layout(self, src_folder="..")

    def generate(self):
        CMakeDeps(self).generate()
        tc = CMakeToolchain(self)
        tc.variables["MINNOW_BUILD_TESTS"] = bool(self.options.with_tests)
        tc.variables["MINNOW_FRONTEND_ONNX"] = bool(self.options.with_onnx)
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        CMake(self).install()

    def package_info(self):
        self.cpp_info.set_property("cmake_find_mode", "none")  # use the installed minnowConfig.cmake
        self.cpp_info.builddirs = ["lib/cmake/minnow"]
        self.cpp_info.libs = ["minnow"]
